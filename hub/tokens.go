// Tokens: who may call the hub, and as whom. Only a token's hash is
// kept; a token is shown once, when it is added.

package hub

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	tg "github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
	"github.com/taskgraph-dev/taskgraph/internal/filenames"
)

// Role is what a token may do.
type Role string

// The roles, from least to most.
const (
	// Viewer reads: Get, List, Board, Limits.
	Viewer Role = "viewer"
	// Agent reads, creates tasks, and claims, renews, completes, fails and
	// releases tasks and writes notes as its own owner only: the token's
	// name. An owner (or note author) in a request that differs is
	// refused with ErrForbidden; an empty one means the token's own. It
	// may edit a task (Update) but not its status or owner.
	Agent Role = "agent"
	// Admin may do everything, as any owner: also set limits, delete,
	// cancel, reopen, load, edit status and owner, and release or complete
	// others' claims (an empty owner means any).
	Admin Role = "admin"
)

// valid reports whether r is one of the three roles.
func (r Role) valid() bool { return r == Viewer || r == Agent || r == Admin }

// Identity is who a token speaks for.
type Identity struct {
	Name string // the token's name: an agent's owner
	Role Role
}

// Tokens tells the hub who a request's token speaks for.
type Tokens interface {
	// Identify returns the identity of token, or an error matching
	// ErrUnauthorized if no valid token is token. It compares in
	// constant time.
	Identify(ctx context.Context, token string) (Identity, error)
}

// TokenStore keeps tokens: MemTokens, TokenFile, and the table of
// package hub/pgtokens. `taskgraph token` manages any of them.
type TokenStore interface {
	Tokens
	// Add makes a token named name with role, keeps its hash and
	// returns it: the only time it is seen. A name that exists is
	// refused with a *tg.InvalidError (revoke it first).
	Add(ctx context.Context, name string, role Role) (string, error)
	// List returns every token's name, role and creation time, by name.
	List(ctx context.Context) ([]TokenInfo, error)
	// Revoke removes the token named name; it returns an error matching
	// tg.ErrNotFound if there is none.
	Revoke(ctx context.Context, name string) error
}

// TokenInfo is what is kept of a token: never the token itself.
type TokenInfo struct {
	Name    string    `json:"name"`
	Role    Role      `json:"role"`
	Created time.Time `json:"created"`
	// Hash is the SHA-256 of the token, in hex. A token is 32 random
	// bytes, so a fast hash is enough: nothing can be guessed from it.
	Hash string `json:"sha256"`
}

// tokenPrefix starts every token, so that a leaked one is recognised
// (secret scanners, logs).
const tokenPrefix = "tgh_"

// namePattern is the form of a token's name, which is also an agent's
// owner: short, printable, without spaces.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// NewToken returns a new token named name with role, and what is to be
// kept of it (never the token): for a TokenStore. A name or role that is
// not valid is refused with a *tg.InvalidError.
func NewToken(name string, role Role) (string, TokenInfo, error) {
	now := time.Now()
	if !namePattern.MatchString(name) {
		return "", TokenInfo{}, &tg.InvalidError{Field: "name", Reason: fmt.Sprintf("%q: a token's name is 1 to 64 letters, digits and . _ @ -, starting with a letter or digit", name)}
	}
	if !role.valid() {
		return "", TokenInfo{}, &tg.InvalidError{Field: "role", Reason: fmt.Sprintf("%q: one of agent, viewer, admin", role)}
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", TokenInfo{}, err
	}
	tok := tokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return tok, TokenInfo{Name: name, Role: role, Created: now.UTC(), Hash: hashToken(tok)}, nil
}

func hashToken(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return fmt.Sprintf("%x", sum)
}

// IdentifyAmong finds token among infos, comparing its hash with every
// one in constant time: how long it takes says nothing of how close a
// guess came. It returns an error matching ErrUnauthorized if token is
// none of them: for a TokenStore.
func IdentifyAmong(infos []TokenInfo, token string) (Identity, error) {
	if token == "" {
		return Identity{}, fmt.Errorf("%w: send Authorization: Bearer TOKEN (taskgraph token add NAME prints one)", ErrUnauthorized)
	}
	h := []byte(hashToken(token))
	found := -1
	for i, info := range infos {
		if subtle.ConstantTimeCompare(h, []byte(info.Hash)) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Identity{}, fmt.Errorf("%w: the token is not one the hub knows (revoked, or never issued)", ErrUnauthorized)
	}
	return Identity{Name: infos[found].Name, Role: infos[found].Role}, nil
}

// MemTokens keeps tokens in memory: for a hub in front of a MemStore,
// and for tests. They are lost when the process exits.
type MemTokens struct {
	mu    sync.Mutex
	infos []TokenInfo
}

// Add implements TokenStore.
func (m *MemTokens) Add(_ context.Context, name string, role Role) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tok, info, err := addTo(m.infos, name, role)
	if err != nil {
		return "", err
	}
	m.infos = append(m.infos, info)
	return tok, nil
}

// List implements TokenStore.
func (m *MemTokens) List(context.Context) ([]TokenInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return sortedInfos(slices.Clone(m.infos)), nil
}

// Revoke implements TokenStore.
func (m *MemTokens) Revoke(_ context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	infos, err := revokeFrom(m.infos, name)
	if err == nil {
		m.infos = infos
	}
	return err
}

// Identify implements Tokens.
func (m *MemTokens) Identify(_ context.Context, token string) (Identity, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return IdentifyAmong(m.infos, token)
}

// addTo returns a new token named name, refusing a name infos has.
func addTo(infos []TokenInfo, name string, role Role) (string, TokenInfo, error) {
	if slices.ContainsFunc(infos, func(i TokenInfo) bool { return i.Name == name }) {
		return "", TokenInfo{}, &tg.InvalidError{Field: "name", Reason: fmt.Sprintf("a token named %q exists: revoke it first", name)}
	}
	return NewToken(name, role)
}

// revokeFrom returns infos without the token named name.
func revokeFrom(infos []TokenInfo, name string) ([]TokenInfo, error) {
	i := slices.IndexFunc(infos, func(i TokenInfo) bool { return i.Name == name })
	if i < 0 {
		return nil, fmt.Errorf("no token named %q: %w", name, tg.ErrNotFound)
	}
	return slices.Delete(slices.Clone(infos), i, i+1), nil
}

// TokenFile keeps tokens in a task directory's sidecar file,
// .taskgraph.tokens, which git ignores (gitrepo.WriteIgnore): the hashes
// are this machine's, never the graph's. The hub reads the file on every
// request — it is small — so a token added or revoked by `taskgraph
// token` counts from the next request, without a restart. Two `token
// add` running at the same instant may lose one of the two: the file is
// replaced whole, without a lock.
type TokenFile struct {
	path string
	mu   sync.Mutex // orders this process's own adds and revokes
}

// OpenTokenFile returns the tokens of the task directory dir, kept in
// its file .taskgraph.tokens. The file need not exist: then there is no
// token.
func OpenTokenFile(dir string) *TokenFile {
	return OpenTokenFileAt(filepath.Join(dir, filenames.Tokens))
}

// OpenTokenFileAt returns the tokens kept in the file path: for tokens
// kept apart from the graph (taskgraph serve --tokens).
func OpenTokenFileAt(path string) *TokenFile {
	return &TokenFile{path: path}
}

// tokensFile is the content of the tokens file.
type tokensFile struct {
	Tokens []TokenInfo `json:"tokens"`
}

// read returns the tokens of the file as it is now.
func (f *TokenFile) read() ([]TokenInfo, error) {
	path := f.path
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var tf tokensFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tf); err != nil {
		return nil, &tg.CorruptError{Path: path, Err: err}
	}
	return tf.Tokens, nil
}

// write replaces the file with infos, atomically and durably, readable
// by its owner only.
func (f *TokenFile) write(infos []TokenInfo) error {
	data, err := json.MarshalIndent(tokensFile{Tokens: infos}, "", "  ")
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(filepath.Dir(f.path))
	if err != nil {
		return err
	}
	defer root.Close()
	return atomicfile.WriteDurable(root, filepath.Base(f.path), append(data, '\n'), 0o600)
}

// List implements TokenStore.
func (f *TokenFile) List(context.Context) ([]TokenInfo, error) {
	infos, err := f.read()
	return sortedInfos(infos), err
}

// sortedInfos sorts infos by name.
func sortedInfos(infos []TokenInfo) []TokenInfo {
	slices.SortFunc(infos, func(a, b TokenInfo) int { return strings.Compare(a.Name, b.Name) })
	return infos
}

// Add implements TokenStore.
func (f *TokenFile) Add(_ context.Context, name string, role Role) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	infos, err := f.read()
	if err != nil {
		return "", err
	}
	tok, info, err := addTo(infos, name, role)
	if err != nil {
		return "", err
	}
	return tok, f.write(append(infos, info))
}

// Revoke implements TokenStore.
func (f *TokenFile) Revoke(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	infos, err := f.read()
	if err != nil {
		return err
	}
	if infos, err = revokeFrom(infos, name); err != nil {
		return err
	}
	return f.write(infos)
}

// Identify implements Tokens. A file that cannot be read refuses every
// token.
func (f *TokenFile) Identify(_ context.Context, token string) (Identity, error) {
	infos, err := f.read()
	if err != nil {
		return Identity{}, fmt.Errorf("%w: the tokens file cannot be read: %v", ErrUnauthorized, err)
	}
	return IdentifyAmong(infos, token)
}
