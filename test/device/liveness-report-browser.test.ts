// The HTML report of `face-check liveness-eval --html` opened from disk in a real browser (Debian's
// Chromium through playwright-core): it renders its chart with a bar per attack kind and one for BPCER,
// shows the rates, counts and the wrongly decided sessions, loads nothing but itself, logs no error and
// holds no image. Photographed at 1280 and 360 px into test-output/screenshots/ (gitignored).
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import type { Browser } from 'playwright-core';

import { defaultConfig } from '../../src/config/load';
import { evalResult, type EvalResult } from '../../src/device/liveness-eval';
import { livenessReportHtml } from '../../src/device/liveness-report';
import type { SessionDecision } from '../../src/device/pad-metrics';
import { tempDir } from '../helpers/app';
import { browserSkipReason, launchBrowser } from '../helpers/browser';

const SCREENSHOTS = path.resolve(__dirname, '..', '..', 'test-output', 'screenshots');

function session(id: string, label: string, accepted: boolean, decisionMs: number | null = null): EvalResult['sessions'][number] {
  const d: SessionDecision = {
    session: id, label, subject: 's01', distanceCm: 70, frames: 18, faceFrames: 18, liveFrames: accepted ? 14 : 0,
    accepted, decisionMs, durationMs: 566.7, reasons: accepted ? {} : { flat: 12, 'nose-relief': 9, window: 18 },
  };
  return { ...d, format: 'face-check', note: '' };
}

const skip = browserSkipReason();
if (skip) {
  t.plan(0, skip);
} else {
  t.test('the report renders in Chromium: chart, values, wrongly decided sessions, nothing external', async (t) => {
    const dir = tempDir();
    const browser: Browser = await launchBrowser();
    t.teardown(async () => {
      await browser.close();
      fs.rmSync(dir, { recursive: true, force: true });
    });
    const sessions = [
      session('live-1', 'live', true, 100), session('live-2', 'live', true, 133.3), session('live-3', 'live', false), session('live-4', 'live', true, 166.7),
      session('print-1', 'print', false), session('print-2', 'print', true, 200), session('print-3', 'print', false),
      session('screen-1', 'screen', false), session('screen-2', 'screen', false),
      session('mask-1', 'mask', false),
    ];
    // A folder name with markup in it: shown as text, never parsed.
    const result = evalResult(defaultConfig(), path.join(dir, '<b>rig & co</b>'), sessions);
    const file = path.join(dir, 'report.html');
    fs.writeFileSync(file, livenessReportHtml(result));

    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const problems: string[] = [];
    page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`); });
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    const requests: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    await page.goto(pathToFileURL(file).href);

    t.equal(await page.title(), 'Liveness evaluation (ISO/IEC 30107-3)');
    t.equal(await page.locator('#chart svg').count(), 1, 'one inline SVG chart');
    const bars = await page.locator('#chart svg rect.bar').evaluateAll((els) => els.map((e) => ({
      kind: e.getAttribute('data-kind'), rate: Number(e.getAttribute('data-rate')), width: (e as SVGRectElement).getBBox().width,
    })));
    t.same(bars.map((b) => b.kind), ['mask', 'print', 'screen', 'live'], 'a bar per attack kind, then BPCER');
    t.same(bars.map((b) => b.rate), [0, 1 / 3, 0, 0.25]);
    t.ok(bars[1].width > bars[3].width && bars[3].width > 0, 'bar lengths follow the rates');
    t.equal(bars[0].width, 0, 'a zero rate draws no bar');
    const chartText = await page.locator('#chart svg').textContent();
    t.match(chartText, /APCER print/);
    t.match(chartText, /33\.33 % \(1\/3\)/, 'the value beside its bar');
    t.match(chartText, /BPCER \(live\)/);
    t.match(chartText, /25\.00 % \(1\/4\)/);
    t.match(await page.locator('#worst-apcer').textContent(), /33\.33 %\s*print/, 'worst-case APCER');
    t.match(await page.locator('#bpcer').textContent(), /25\.00 %\s*1 of 4 bona fide rejected/);
    t.match(await page.locator('#decision-time').textContent(), /133 ms/, 'decision time p50');
    const rows = await page.locator('#kinds tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].slice(0, 3).map((td) => td.textContent)));
    t.same(rows, [['live (bona fide)', '4', '3'], ['mask', '1', '0'], ['print', '3', '1'], ['screen', '2', '0']], 'presentations and acceptances per kind');
    const wrong = await page.locator('#wrong tbody tr td:first-child').allTextContents();
    t.same(wrong, ['live-3', 'print-2'], 'the wrongly decided sessions');
    t.match(await page.locator('#wrong').textContent(), /bona fide rejected[\s\S]*flat, nose-relief[\s\S]*attack accepted/);
    t.match(await page.locator('.meta').first().textContent(), /<b>rig & co<\/b>/, 'markup in a folder name stays text');
    t.equal(await page.locator('b:text("rig")').count(), 0);
    t.equal(await page.locator('img, script, link, iframe').count(), 0, 'no image, script or linked resource');
    t.same(requests, [pathToFileURL(file).href], 'nothing loaded but the report itself');
    t.same(problems, [], 'no console error or warning');
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SCREENSHOTS, 'liveness-report-1280.png'), fullPage: true });
    await page.setViewportSize({ width: 360, height: 800 });
    t.equal(await page.evaluate(() => document.documentElement.scrollWidth), 360, 'no horizontal page scroll at 360 px');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'liveness-report-360.png'), fullPage: true });
  });
}
