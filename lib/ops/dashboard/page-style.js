'use strict';

/** The dashboard's style sheet, inlined into the page by page.js. */
const STYLE = `
:root {
  --bg: #f7f7f9; --fg: #1d1d22; --muted: #6a6a75; --card: #fff; --line: #e2e2e8;
  --up: #17803d; --down: #c62828; --draining: #a86400; --backup: #3559b5; --limit: #8a3ab9;
  --chart: #3559b5; --errors: #c62828; --latency: #7c5cbf;
  font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #16161a; --fg: #e8e8ee; --muted: #9a9aa8; --card: #202026; --line: #33333c;
    --up: #4cc276; --down: #ff6b6b; --draining: #f0a53a; --backup: #7d9cf0; --limit: #c58af0;
    --chart: #7d9cf0; --errors: #ff6b6b; --latency: #b59cf0;
  }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); }
header, main { max-width: 1400px; margin: 0 auto; padding: 12px 16px; }
header { display: flex; flex-wrap: wrap; gap: 8px 32px; align-items: flex-end; justify-content: space-between; }
h1 { margin: 0; font-size: 22px; }
h2 { margin: 0; font-size: 16px; }
.muted { color: var(--muted); font-weight: normal; }
.title { display: flex; align-items: baseline; gap: 16px; flex-wrap: wrap; }
.live { margin: 0; font-size: 12px; padding: 2px 8px; border-radius: 10px; background: var(--line); }
.live[data-live="live"] { background: color-mix(in srgb, var(--up) 18%, transparent); color: var(--up); }
.live[data-live="lost"] { background: color-mix(in srgb, var(--down) 18%, transparent); color: var(--down); }
.facts { display: flex; flex-wrap: wrap; gap: 4px 24px; margin: 0; }
.facts div { display: flex; flex-direction: column; }
.facts dt { font-size: 11px; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
.facts dd { margin: 0; font-variant-numeric: tabular-nums; }
.tiles { display: grid; grid-template-columns: repeat(auto-fit, minmax(130px, 1fr)); gap: 8px; }
.tile { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 8px 12px; display: flex; flex-direction: column; }
.tile .label { font-size: 11px; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
.tile .value { font-size: 22px; font-variant-numeric: tabular-nums; white-space: nowrap; }
.tile .note { font-size: 11px; color: var(--muted); min-height: 1.4em; }
.earlier, .tile .value.earlier { color: var(--muted); }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(260px, 1fr)); gap: 8px; margin-top: 8px; }
figure { margin: 0; background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 8px 12px; }
figcaption { font-size: 12px; color: var(--muted); display: flex; justify-content: space-between; }
.chart { width: 100%; height: 80px; display: block; overflow: visible; }
.chart .line, .spark .line { fill: none; stroke: var(--chart); stroke-width: 1.5; vector-effect: non-scaling-stroke; }
.chart .area, .spark .area { fill: color-mix(in srgb, var(--chart) 15%, transparent); stroke: none; }
.chart.errors .line, .spark.errors .line { stroke: var(--errors); }
.chart.errors .area, .spark.errors .area { fill: color-mix(in srgb, var(--errors) 15%, transparent); }
.chart.latency .line, .spark.latency .line { stroke: var(--latency); }
.chart.latency .area, .spark.latency .area { fill: color-mix(in srgb, var(--latency) 15%, transparent); }
.chart .grid { stroke: var(--line); stroke-width: 1; vector-effect: non-scaling-stroke; }
.bar { display: flex; justify-content: space-between; align-items: center; gap: 12px; margin: 16px 0 8px; flex-wrap: wrap; }
.scroll { overflow-x: auto; background: var(--card); border: 1px solid var(--line); border-radius: 8px; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
thead th { font-size: 11px; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; font-weight: 600; white-space: nowrap; }
tbody tr:last-child td { border-bottom: 0; }
tr.group th { background: var(--bg); font-size: 12px; }
tr.pool th { font-size: 14px; padding-top: 12px; }
.name { font-weight: 600; }
.address, .since, .reason, .small { font-size: 12px; color: var(--muted); }
.piece { white-space: nowrap; }
.col-backend > .cell { min-width: 8em; }
/* A backend's name and address keep their whole width, up to 20em, and only a longer one
   wraps at its pieces: the table would otherwise give the column no more than its widest
   piece as soon as the other columns want room (127.0.0.1: / 32001). */
.col-backend .name, .col-backend .address { width: max-content; max-width: 20em; }
.listeners { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 360px), 1fr)); gap: 8px; }
.listener { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 8px 12px; min-width: 0; }
.listener-head { display: flex; flex-wrap: wrap; align-items: baseline; gap: 2px 8px; }
.listen-address { font-weight: 600; }
.badge { font-size: 11px; font-weight: 600; padding: 0 6px; border-radius: 8px; background: var(--line); }
.routes { list-style: none; margin: 6px 0 0; padding: 0; }
.routes li { display: flex; flex-wrap: wrap; align-items: baseline; gap: 0 8px; padding: 4px 0; border-top: 1px solid var(--line); }
.routes .match { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px; }
.routes .match.every { font: inherit; }
.routes .arrow { color: var(--muted); }
.routes .to { flex: 1 1 12em; }
.routes .target { white-space: nowrap; }
.routes .pool-name { font-weight: 600; }
.routes .count { margin-left: auto; white-space: nowrap; }
.fleet-line { margin: 0 0 8px; }
.store-url { font-weight: 600; }
.behind { color: var(--draining); font-weight: 600; }
.col-member > .cell { min-width: 10em; }
.col-member .badge { margin-left: 6px; }
.col-state > .cell { min-width: 11em; }
.col-latency, .col-rate, .col-errors, .col-weight, .col-active { white-space: nowrap; }
.col-lastError > .cell { min-width: 6em; }
.col-check > .cell { min-width: 8em; }
.state { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; color: #fff; white-space: nowrap; }
.state-up { background: var(--up); }
.state-down { background: var(--down); }
.state-draining { background: var(--draining); }
.state-backup { background: var(--backup); }
.state-limit { background: var(--limit); }
tr.down td { background: color-mix(in srgb, var(--down) 7%, transparent); }
.error-text { color: var(--down); }
.spark { width: 110px; height: 28px; display: block; }
.actions-cell { white-space: nowrap; }
.actions-cell button, .actions-cell input, .token button, .token input { font: inherit; }
.actions-cell input { width: 4em; }
.actions-cell .weight { display: flex; gap: 4px; margin-top: 4px; }
button { cursor: pointer; }
.hide-actions .actions-cell { display: none; }
.admin { margin-top: 12px; }
.token { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; }
.note { color: var(--muted); }
.message { min-height: 1.4em; margin: 8px 0 0; }
.message.failed { color: var(--down); }
[hidden] { display: none !important; }
@media (max-width: 760px) {
  header, main { padding: 8px; }
  thead { display: none; }
  table, tbody, tr, td, th { display: block; }
  tbody tr { border-bottom: 1px solid var(--line); padding: 6px 0; }
  td { border: 0; padding: 2px 10px; display: grid; grid-template-columns: 7.5em minmax(0, 1fr); gap: 8px; white-space: normal; }
  td > .cell { min-width: 0 !important; }
  .col-backend .name, .col-backend .address { width: auto; max-width: none; }
  .routes .target { white-space: normal; }
  .piece { display: inline-block; max-width: 100%; overflow: hidden; text-overflow: ellipsis; vertical-align: top; }
  .tile .value { font-size: 18px; white-space: normal; }
  td::before { content: attr(data-label); color: var(--muted); font-size: 12px; }
  tr.group th { display: block; }
  .hide-actions td.actions-cell { display: none; }
}
`;

module.exports = { STYLE };
