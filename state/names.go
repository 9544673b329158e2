package state

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"strings"
)

// maxDirName bounds a directory name made from a user's name, well under
// every file system's limit of 255 bytes per path element.
const maxDirName = 64

// AllowedNameChars says, for error messages, which characters a job id or a
// directory name may hold.
const AllowedNameChars = "letters A-Z and a-z, digits, '.', '_' and '-' (not starting with '.')"

// ValidDirName reports whether name can be used as one directory name as it
// is: 1 to 64 of the characters AllowedNameChars lists, not starting with '.'
// (which also rules out "." and "..", and hidden or temporary names).
func ValidDirName(name string) bool {
	if name == "" || len(name) > maxDirName || name[0] == '.' {
		return false
	}
	return sanitize(name) == name
}

// SafeDirName maps any name a user typed (a job name, an operator id) to a
// name that is safe as one directory: a valid name is kept as it is;
// anything else becomes its safe characters plus the first 8 hex digits of
// the name's SHA-256, so "word count" and "word-count" stay apart and "../x"
// or "/etc" can never leave the directory it is joined to. Flink sidesteps
// the question by naming directories by the job's hex JobID; StateLab keeps
// a readable prefix so that a learner recognises the directory. The result
// is deterministic: the same name gives the same directory in every run.
func SafeDirName(name string) string {
	if ValidDirName(name) {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := hex.EncodeToString(sum[:4])
	stem := strings.Trim(sanitize(name), ".-")
	// Runs of replaced characters read better as one dash.
	for strings.Contains(stem, "--") {
		stem = strings.ReplaceAll(stem, "--", "-")
	}
	if stem == "" {
		stem = "job"
	}
	if limit := maxDirName - len(suffix) - 1; len(stem) > limit {
		stem = strings.TrimRight(stem[:limit], ".-")
	}
	return stem + "-" + suffix
}

// errUnsafePath is returned (with ErrCorrupt, so a restore falls back to an
// older checkpoint) when a path read from checkpoint metadata would leave the
// job's checkpoint directory.
var errUnsafePath = errors.New("state: path leaves the checkpoint directory")

// checkRelPath accepts a slash-separated path relative to the job directory
// that stays inside it: not absolute, no "." or ".." element, no empty
// element, no backslash (a separator on Windows). Checkpoint metadata is a
// file anyone with access to the directory can edit; a path in it must
// never reach outside.
func checkRelPath(p string) error {
	if p == "" || path.IsAbs(p) || strings.ContainsAny(p, "\\\x00") {
		return fmt.Errorf("%w: %w: %q", ErrCorrupt, errUnsafePath, p)
	}
	for _, el := range strings.Split(p, "/") {
		if el == "" || el == "." || el == ".." {
			return fmt.Errorf("%w: %w: %q", ErrCorrupt, errUnsafePath, p)
		}
	}
	return nil
}
