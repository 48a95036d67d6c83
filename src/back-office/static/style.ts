// The back-office's one stylesheet, kept as a string so that it ships inside dist/src/ with the code (the
// package's "files" holds no other folder) and is served by the program itself: no CDN, no internet.
// Usable from 360 px to 1440 px: one column; on a narrow screen a table of many columns shows each row as a
// card (every cell with its column's name), so no control is off screen; a chart keeps readable labels and
// scrolls inside its own box; long lines wrap.
export const STYLE_CSS = `
*, *::before, *::after { box-sizing: border-box; }
html { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; line-height: 1.5; color: #1a1a1a; background: #fff; }
body { margin: 0; }
/* The copy buttons are hidden until the script shows them; no display rule below may override that. */
[hidden] { display: none !important; }
main, .top { max-width: 72rem; margin: 0 auto; padding: 0.75rem 1rem; }
main:focus { outline: none; }
h1 { font-size: 1.6rem; margin: 0.5rem 0 1rem; }
h2 { font-size: 1.25rem; margin: 2rem 0 0.5rem; }
h3 { font-size: 1.05rem; margin: 0 0 0.5rem; }
a { color: #0b4fa8; }
a:hover { color: #06336e; }
code, pre { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 0.9rem; }
pre { background: #f3f5f8; border: 1px solid #c9d1dc; border-radius: 4px; padding: 0.6rem; margin: 0.25rem 0;
  white-space: pre-wrap; word-break: break-all; overflow-wrap: anywhere; }

/* Visible focus on everything keyboard-operable. */
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible,
summary:focus-visible, pre:focus-visible, [tabindex]:focus-visible {
  outline: 3px solid #e07b00; outline-offset: 2px;
}

.skip { position: absolute; left: -999px; top: 0; background: #fff; padding: 0.5rem; z-index: 10; }
.skip:focus { left: 0.5rem; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }

.top { display: flex; flex-wrap: wrap; align-items: center; gap: 0.5rem 1.5rem; border-bottom: 1px solid #d6dbe2; }
.brand { margin: 0; font-weight: 700; }
.brand a { text-decoration: none; color: inherit; }
/* The navigation takes the rest of the brand's line, or a line of its own when less than 22rem is left. */
nav { display: flex; flex-wrap: wrap; align-items: center; gap: 0.5rem 1rem; flex: 1 1 22rem; }
.nav { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; }
.nav a[aria-current="page"] { font-weight: 700; text-decoration-thickness: 3px; }
.sign-out { display: flex; align-items: center; gap: 0.5rem; margin-left: auto; }
.who { color: #555; font-size: 0.9rem; overflow-wrap: anywhere; }

form.stack { display: flex; flex-direction: column; align-items: flex-start; gap: 0.35rem; max-width: 40rem; }
form.stack > label { font-weight: 600; margin-top: 0.5rem; }
form.inline { display: flex; flex-wrap: wrap; align-items: center; gap: 1rem; }
input[type="text"], input[type="email"], input[type="password"], input[type="number"], select, textarea {
  font: inherit; width: 100%; max-width: 40rem; padding: 0.45rem 0.5rem; border: 1px solid #767f8c; border-radius: 4px;
}
textarea { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 0.85rem; }
fieldset { border: 1px solid #c9d1dc; border-radius: 4px; padding: 0.5rem 0.75rem; margin: 0.75rem 0; width: 100%; }
legend { font-weight: 600; padding: 0 0.25rem; }
fieldset > label { display: block; margin-top: 0.75rem; font-weight: 600; }
.choice { display: flex; align-items: flex-start; gap: 0.5rem; margin: 0.35rem 0; }
.choice input { margin-top: 0.3rem; flex: none; width: 1.1rem; height: 1.1rem; }
button, .button { font: inherit; display: inline-block; padding: 0.45rem 1rem; border-radius: 4px; border: 1px solid #0b4fa8;
  background: #0b4fa8; color: #fff; cursor: pointer; text-decoration: none; margin-top: 0.5rem; }
button:hover, .button:hover { background: #06336e; color: #fff; }
.sign-out button { margin: 0; padding: 0.25rem 0.75rem; background: #fff; color: #0b4fa8; }
.danger, button.danger { background: #a31515; border-color: #a31515; color: #fff; }
.danger:hover { background: #6e0e0e; }
button.copy { margin: 0; padding: 0.2rem 0.75rem; }

.hint { color: #4a5260; font-size: 0.9rem; margin: 0; }
.notice { background: #e6f4ea; border-left: 4px solid #1e7b34; padding: 0.5rem 0.75rem; }
.problem { background: #fdecea; border-left: 4px solid #a31515; padding: 0.5rem 0.75rem; }
.warning { background: #fff4e0; border-left: 4px solid #e07b00; padding: 0.5rem 0.75rem; }
.copied { margin-left: 0.5rem; color: #1e7b34; font-size: 0.9rem; }
.caption { font-weight: 600; margin: 0.75rem 0 0; }

dl.facts { display: grid; grid-template-columns: minmax(8rem, max-content) 1fr; gap: 0.25rem 1rem; margin: 0.5rem 0; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
@media (max-width: 30rem) {
  dl.facts { grid-template-columns: 1fr; }
  dl.facts dd { margin-bottom: 0.4rem; }
}

/* position: relative so that visually hidden text inside (absolutely positioned) is clipped by the box too. */
.table-scroll { overflow-x: auto; max-width: 100%; margin: 0.5rem 0; position: relative; }
table { border-collapse: collapse; min-width: 100%; }
caption { text-align: left; font-weight: 600; padding: 0.25rem 0; }
th, td { text-align: left; padding: 0.35rem 0.6rem; border-bottom: 1px solid #d6dbe2; white-space: nowrap; vertical-align: top; }
tr.revoked td { color: #6b7280; }
@media (max-width: 40rem) {
  table.stacked, table.stacked tbody, table.stacked tr, table.stacked td, table.stacked caption { display: block; width: 100%; }
  table.stacked { min-width: 0; }
  table.stacked thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  table.stacked tr { border-bottom: 1px solid #d6dbe2; padding: 0.4rem 0; }
  table.stacked td { border: none; padding: 0.1rem 0; white-space: normal; overflow-wrap: anywhere; }
  table.stacked td[data-label]::before { content: attr(data-label) ": "; font-weight: 600; }
}

.licence-line { border: 1px solid #c9d1dc; border-radius: 6px; padding: 0.75rem 1rem; margin: 0.75rem 0; }
.licence-line.revoked { background: #f6f6f6; }
.status { font-size: 0.85rem; font-weight: 400; border: 1px solid #767f8c; border-radius: 3px; padding: 0 0.35rem; margin-left: 0.35rem; }

figure.chart { margin: 1rem 0 1.5rem; }
figcaption { font-weight: 600; margin-bottom: 0.25rem; }
svg.bars { width: 100%; max-width: 48rem; height: auto; display: block; }
.chart-scroll { overflow-x: auto; max-width: 100%; }
/* Shrunk to a phone's width the labels would be a few pixels high: the chart keeps its own size instead. */
@media (max-width: 40rem) { svg.bars { width: auto; max-width: none; } }
svg.bars .bar { fill: #0b4fa8; }
svg.bars .hit { fill: transparent; }
svg.bars .day:hover .bar { fill: #e07b00; }
svg.bars .axis { stroke: #1a1a1a; stroke-width: 1; }
svg.bars .grid { stroke: #c9d1dc; stroke-width: 1; stroke-dasharray: 3 3; }
svg.bars .label { font-size: 11px; fill: #333; }
details { margin-top: 0.25rem; }
`;
