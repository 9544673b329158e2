// Package static holds StateLab's browser assets — CSS, ES modules, message
// catalogues and icons — embedded into the binary, so the app works offline
// and needs no build step: the files here are served as they are.
//
// Layout:
//
//   - css/app.css: every style (no inline style attribute, so the CSP can
//     refuse inline styles);
//   - js/*.js: ES modules; js/live.js starts a live view, js/views/*.js draw
//     one panel each in SVG or HTML from the session model (js/model.js);
//   - i18n/<lang>.json: message catalogues, read by the server for pages
//     and by the browser for live text;
//   - img/: icons.
package static

import "embed"

// FS is the embedded asset tree, rooted at this directory (css/, js/, i18n/, img/).
//
//go:embed css js i18n img
var FS embed.FS
