// Package powerloss holds the power-loss test of taskgraph's FileStore on
// real filesystem images. It has no code of its own: everything is in its
// tests, which run only on Linux, as root, with loop devices.
//
// # The method
//
// Each round makes a filesystem (ext4 with its default mount options, ext4
// with noauto_da_alloc, ext4 with data=writeback, xfs, btrfs; ext4 without
// a journal, after the e2fsck it then needs, only when
// TASKGRAPH_POWERLOSS_FS names it: see its Unproven) in an image
// file, attaches it to a loop device and mounts it. The image lives on
// the run's host filesystem, an XFS with reflinks in an image on tmpfs. Several
// writer processes (the test binary, re-executed) share one task
// directory there and loop over random writes; a reader lists and gets;
// an "other program" writes and fsyncs unrelated files on the same
// filesystem, whose fsyncs commit the filesystem's journal at moments the
// store does not choose. The task directory's parent is a git repository
// (the graph committed on main, a branch side, a clone beside it), and a
// git writer works in it between the store's writes, without the store's
// lock, as a person does: it commits, checks out side and main again
// (forced: files removed and rewritten), pulls from the clone after the
// clone completed and edited tasks through a store of its own (merge
// driver: taskgraph's rules), edits and deletes task files by hand, and
// runs sync after each operation. Every process appends to a ledger
// outside the image, one write(2) a line stamped with CLOCK_MONOTONIC:
// before each write what it is about to do, after each write that
// returned what the store told it (ids, revs, content) or that it was
// refused, for the reader every (id, rev) it was shown, and for the git
// writer, once its sync returned, which version (a digest of the bytes)
// each task file it wrote holds.
//
// After a random 1–4 s the power is cut: the image file is cloned in one
// step (FICLONE) while every process goes on writing. In half the rounds
// the store's processes are first stopped with SIGSTOP and the git writer
// goes on alone for up to a second before the cut (the store idle while a
// person pulls, then the power goes). The clone holds exactly the writes
// the loop device had completed — what a disk that keeps every write it
// receives holds at a power cut, everything still in the page cache or on
// its way lost, an fsync in flight cut short (a cut after every process
// had stopped would let each fsync in flight finish, and on a filesystem
// with one journal any of them commits every rename before it: a store
// that skipped its directory's fsync lost nothing on ext4 that way). The
// ledgers are read as they stood at the clone: a line written once the
// clone had begun counts only as an intent, its outcome too late. The
// clone is mounted and a checker process opens the store in a mount
// namespace whose /proc/sys/kernel/random/boot_id is new, as after a
// restart, and verifies against the ledgers that no acknowledged write
// was lost, no version git made durable was overwritten, no read was
// undone, and the directory needs no person to repair it. Which version
// each task file may hold — git's over a store write acknowledged before
// git began, a store write acknowledged after git's sync over git's — is
// one rule, written at history.verify.
//
// # Its limit
//
// The copy is the disk as the kernel left it, not as a real disk may: a
// drive that loses its volatile write cache, reorders writes the kernel
// sent without a flush between them, or tears a sector is not modelled.
// So the test proves that the store asks the filesystem for the right
// order and flushes (the part that depends on the filesystem's own
// ordering rules, delayed allocation and journal commits made by other
// programs), not that a given drive honours flushes. A broken protocol
// makes it fail: with the directory's fsync of a single-file write left
// out, 10 rounds on ext4 with its defaults lost 5 acknowledged writes and
// undid 3 reads (bench/notebook/powerloss-runs.md). A round cuts at one
// random moment; many rounds (TASKGRAPH_POWERLOSS_ROUNDS) are needed to
// say much, and the deterministic cases pin down the orders known to be
// dangerous.
package powerloss
