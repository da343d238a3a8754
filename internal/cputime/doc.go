// Package cputime reads the CPU time of this process: what a measure of
// work takes on a shared machine, where other processes stretch the wall
// time of the same work.
package cputime
