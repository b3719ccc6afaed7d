// Package lang decides, without any model, whether a Laya state is English
// Latin text that the English checkpoint can read, or text for the
// multilingual checkpoint.
//
// Script detection is exact; the Latin-script language guess is a
// stopword/diacritic heuristic and is best effort, exactly as laya-mlx's
// laya_mlx/lang.py (tncki/laya-mlx@457bb780), which this package follows rule
// for rule and whose word lists it carries verbatim. Python's str.isalpha,
// str.lower, unicodedata.combining and the re module's \w/\d classes are
// reproduced where the port depends on them.
package lang
