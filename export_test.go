package taskgraph

// SetWatchPollOnly makes Watch poll instead of using inotify, for tests of
// the fallback; the returned function restores the previous setting.
func SetWatchPollOnly(on bool) (restore func()) {
	old := watchPollOnly
	watchPollOnly = on
	return func() { watchPollOnly = old }
}
