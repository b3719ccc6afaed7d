package hub

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// DefaultRevision is the branch used when a reference names none.
const DefaultRevision = "main"

// Ref names a checkpoint on the Hub: a repository, a revision (branch, tag or
// commit) and an optional subfolder inside the repository.
type Ref struct {
	Repo      string // "org/name"
	Revision  string // "" means DefaultRevision
	Subfolder string // "" means the repository root
}

// String renders the reference as ParseRef reads it: org/name[/sub][@rev].
func (r Ref) String() string {
	s := r.Repo
	if r.Subfolder != "" {
		s += "/" + r.Subfolder
	}
	if r.Revision != "" {
		s += "@" + r.Revision
	}
	return s
}

func (r Ref) revision() string {
	if r.Revision == "" {
		return DefaultRevision
	}
	return r.Revision
}

// repoIDPattern follows huggingface_hub's validate_repo_id: one optional
// namespace, word characters, '-' and '.', no "--" or ".." anywhere and at
// most 96 characters.
var repoIDPattern = regexp.MustCompile(`^[A-Za-z0-9_.\-]+/[A-Za-z0-9_.\-]+$`)

var commitPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

// ParseRef reads "org/name", "org/name@revision" or "org/name/sub/folder@revision".
// Segments after the second one are the subfolder, since Hub repository ids
// have exactly one slash.
func ParseRef(s string) (Ref, error) {
	s = strings.TrimSpace(s)
	var ref Ref
	if at := strings.IndexByte(s, '@'); at >= 0 {
		ref.Revision = s[at+1:]
		s = s[:at]
		if ref.Revision == "" {
			return Ref{}, fmt.Errorf("%w: %q has an empty revision after '@'; write org/name@main or drop the '@'", ErrBadRef, s+"@")
		}
	}
	parts := strings.Split(s, "/")
	if len(parts) < 2 {
		return Ref{}, fmt.Errorf("%w: %q is not a Hub repository id; write it as org/name", ErrBadRef, s)
	}
	ref.Repo = parts[0] + "/" + parts[1]
	ref.Subfolder = strings.Join(parts[2:], "/")
	if err := ref.Validate(); err != nil {
		return Ref{}, err
	}
	return ref, nil
}

// LooksLikeRepoID reports whether s has the shape of a Hub reference
// (org/name[/sub][@rev]) rather than of a local path. It does not look at the
// file system: callers check for an existing directory first.
func LooksLikeRepoID(s string) bool {
	if s == "" || strings.HasPrefix(s, "/") || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "~") || strings.ContainsRune(s, '\\') {
		return false
	}
	_, err := ParseRef(s)
	return err == nil
}

// Validate checks the three parts of the reference. Revisions and subfolders
// become cache paths, so anything that could leave the cache is rejected.
func (r Ref) Validate() error {
	if !repoIDPattern.MatchString(r.Repo) || len(r.Repo) > 96 || strings.Contains(r.Repo, "--") || strings.Contains(r.Repo, "..") {
		return fmt.Errorf("%w: %q is not a Hub repository id; use org/name with letters, digits, '-', '_' and '.'", ErrBadRef, r.Repo)
	}
	if r.Revision != "" && !safeRelPath(r.Revision) {
		return fmt.Errorf("%w: revision %q of %s is not a branch, tag or commit name; use e.g. main, v1.0 or a 40-hex commit", ErrBadRef, r.Revision, r.Repo)
	}
	if r.Subfolder != "" && !safeRelPath(r.Subfolder) {
		return fmt.Errorf("%w: subfolder %q of %s must be a relative path inside the repository", ErrBadRef, r.Subfolder, r.Repo)
	}
	return nil
}

// safeRelPath accepts slash-separated relative names without empty, "." or
// ".." segments and without control characters or backslashes.
func safeRelPath(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\\\x00") {
		return false
	}
	for _, c := range p {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return path.Clean(p) == p
}

// cacheFolderName is huggingface_hub's repo_folder_name for model repos.
func cacheFolderName(repo string) string {
	return "models--" + strings.ReplaceAll(repo, "/", "--")
}

// repoFile joins the subfolder and a checkpoint-relative file name into the
// path inside the repository.
func (r Ref) repoFile(name string) string {
	if r.Subfolder == "" {
		return name
	}
	return r.Subfolder + "/" + name
}
