// Package browsertest tests the taskgraph board in a real browser: headless
// Chromium driven over the Chrome DevTools Protocol with chromedp. It is a
// module of its own so that chromedp never becomes a dependency of
// taskgraph.
package browsertest
