// Package lang decides, without any model, whether a Laya state is English
// Latin text that the English checkpoint can read, or text for the
// multilingual checkpoint.
//
// Script detection is exact; the Latin-script language guess is a
// stopword/diacritic heuristic and is best effort, exactly as upstream's
// laya/lang.py of 0.3.29 (mirrored at tgundhus/laya@2d0be4e9), which this
// package follows rule for rule and whose word lists it carries verbatim:
// Swedish among the languages, one accented loanword not enough to leave
// English (#337), an English word that doubles as a foreign function word
// counted once (#955), all-caps acronym lines not read as French or Spanish
// while shouted Portuguese stays Portuguese (#1013), and a state that reads
// as English overall read again line by line and field by field
// (Analysis.MixedSegment). Python's str.isalpha,
// str.lower, unicodedata.combining and the re module's \w/\d classes are
// reproduced where the port depends on them.
package lang
