package main

import (
	"os"
	"path/filepath"
	"testing"
)

const sample = `package p

// FileStore is counted.
type FileStore struct{}

func (s *FileStore) Get() {}
func (s *FileStore) get() {}
func (s FileStore) Put()  {}

// Old is kept for a while.
//
// Deprecated: use New.
func Old() {}

func New() {}
func helper() {}

const (
	A = 1
	b = 2
	// C goes.
	//
	// Deprecated: gone soon.
	C = 3
)

type (
	T struct{}
	u struct{}
)

func (T) M()  {}
func (u) N()  {}
func (T) m()  {}

// V embeds u, so u's exported method N is V's too: counted.
type V struct {
	u
	W int
}
`

func TestCount(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p_test.go"), []byte("package p\n\nfunc (s *FileStore) Test() {}\nfunc Exported() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := count(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.methods["FileStore"]; got != 3 {
		t.Errorf("FileStore methods: %d, want 3 (tests not counted)", got)
	}
	// FileStore, Get, Put, New, A, T, M, V and N promoted to V: not Old
	// or C (deprecated), nor lower-case names, nor the methods of
	// unexported types no exported type embeds.
	if c.exports != 9 {
		t.Errorf("exports: %d, want 9", c.exports)
	}
	if fails := c.check(3, 9); len(fails) != 0 {
		t.Errorf("at the limits: %v", fails)
	}
	if fails := c.check(2, 8); len(fails) != 2 {
		t.Errorf("past both limits: %v, want two findings", fails)
	}
}

// TestTreeWithinLimits: the repository itself, as .ci/run checks it.
func TestTreeWithinLimits(t *testing.T) {
	c, err := count(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if c.methods["FileStore"] < 10 || c.exports < 50 {
		t.Fatalf("counted %d FileStore methods and %d exports: not the root package", c.methods["FileStore"], c.exports)
	}
	for _, f := range c.check(maxFileStoreMethods, maxExports) {
		t.Error(f)
	}
}
