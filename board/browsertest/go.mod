module github.com/taskgraph-dev/taskgraph/board/browsertest

go 1.25.0

require (
	github.com/chromedp/chromedp v0.23.1
	github.com/taskgraph-dev/taskgraph v0.0.0
)

require (
	github.com/chromedp/cdproto v0.160.1 // indirect
	github.com/fsnotify/fsnotify v1.9.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	golang.org/x/sys v0.47.0 // indirect
)

replace github.com/taskgraph-dev/taskgraph => ../..
