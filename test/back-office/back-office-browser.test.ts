// The back-office in a real browser (Debian's Chromium through playwright-core) against the service listening
// on a loopback port: an operator registers, sees the free key once, creates and revokes keys, downloads a
// signing key once, adds a licence with an activation code, sets its grants, copies the installation command,
// reads usage and signs out; a second operator reaches nothing of the first's; a form without its CSRF token
// changes nothing; pages work with JavaScript disabled; sign-in is throttled. Every page is checked for labels,
// width at 360 px and the absence of biometric data, and photographed at 1440 and 360 px into
// test-output/screenshots/ (gitignored).
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { browserSkipReason, launchBrowser } from '../helpers/browser';
import { startTestApp, tempDir, type TestApp } from '../helpers/app';
import { fakePhotoB64 } from '../helpers/fake-engine';
import { writeTinyTarball } from '../helpers/tiny-package';
import { ActivationCodes } from '../../src/licensing/cloud/activation-codes';

const SCREENSHOTS = path.resolve(__dirname, '..', '..', 'test-output', 'screenshots');
const PASSWORD = 'correct horse battery';
const OTHER_PASSWORD = 'another long passphrase';
const FIRST = 'first.operator@example.com';
const SECOND = 'second.operator@example.com';

const skip = browserSkipReason();
if (skip) {
  t.plan(0, skip);
} else {
  void run();
}

async function run(): Promise<void> {
  fs.rmSync(SCREENSHOTS, { recursive: true, force: true });
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  const dir = tempDir();
  const app: TestApp = await startTestApp({
    dir,
    tune: (c) => {
      c.server.mode = 'cloud';
      c.licensing.package_file = writeTinyTarball(dir);
    },
  });
  await app.app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.app.server.address();
  const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const browser: Browser = await launchBrowser();
  t.teardown(async () => {
    await browser.close();
    await app.close();
  });

  const photo = await fakePhotoB64({ identity: 7 });
  /** Checks every page the scenario visits: labels, 360 px, no biometric data; and photographs it. */
  const inspect = async (tt: Test, page: Page, name: string) => {
    const unlabelled = await page.evaluate(() => [...document.querySelectorAll('input, select, textarea')]
      .filter((el) => (el as HTMLInputElement).type !== 'hidden')
      .filter((el) => ((el as HTMLInputElement).labels?.length ?? 0) === 0)
      .map((el) => el.outerHTML));
    tt.same(unlabelled, [], `${name}: every form field has a label`);
    const html = await page.content();
    tt.notMatch(html, /<img\b|data:image/i, `${name}: no image`);
    tt.notOk(html.includes(photo.slice(0, 64)), `${name}: no enrolled photo`);
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}-1440.png`), fullPage: true });
    await page.setViewportSize({ width: 360, height: 800 });
    // Elements that stick out of the 360 px page (inside a scrolling box does not count: the box clips them).
    const wide = await page.evaluate(() => {
      const width = document.documentElement.clientWidth;
      const clipped = (el: Element) => el.parentElement?.closest('.table-scroll, .chart-scroll') != null;
      return [...document.body.querySelectorAll('*')]
        .filter((el) => !clipped(el) && el.getBoundingClientRect().right > width + 0.5)
        .map((el) => `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}${el.className ? `.${String(el.className)}` : ''}`);
    });
    tt.same(wide, [], `${name}: nothing wider than 360 px (only a chart scrolls, in its own box)`);
    // Every control and caption lies wholly on screen, scroll boxes or not: nothing needs sideways scrolling.
    const offScreen = await page.evaluate(() => {
      const width = document.documentElement.clientWidth;
      return [...document.body.querySelectorAll('a, button, input, select, textarea, summary, caption, figcaption, label')]
        .filter((el) => !el.closest('[hidden], .visually-hidden, .skip'))
        .map((el) => ({ el, box: el.getBoundingClientRect() }))
        .filter(({ box }) => box.width > 0 && (box.left < -0.5 || box.right > width + 0.5))
        .map(({ el, box }) => `${el.tagName.toLowerCase()} "${(el.textContent ?? '').trim().slice(0, 30)}" ${Math.round(box.left)}..${Math.round(box.right)}`);
    });
    tt.same(offScreen, [], `${name}: every control and caption within 360 px`);
    const smallLabels = await page.evaluate(() => [...document.querySelectorAll('svg.bars text')]
      .map((el) => el.getBoundingClientRect().height).filter((h) => h > 0 && h < 10));
    tt.same(smallLabels, [], `${name}: chart labels at least 10 px high`);
    tt.equal(await page.evaluate(() => document.documentElement.scrollWidth), 360, `${name}: no horizontal page scroll`);
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}-360.png`), fullPage: true });
    await page.setViewportSize({ width: 1440, height: 900 });
  };
  /** A link of the navigation bar (the account page links the same sections again). */
  const nav = (page: Page, name: string) => page.getByRole('navigation').getByRole('link', { name, exact: true });
  const newContext = (javaScriptEnabled = true): Promise<BrowserContext> =>
    browser.newContext({ baseURL: base, viewport: { width: 1440, height: 900 }, javaScriptEnabled, acceptDownloads: true });
  const apiGet = (key: string, url: string) => fetch(`${base}${url}`, { headers: { 'api-key': key } });

  // Filled in as the first operator goes along, for the second operator's attempts.
  const first = { freeKey: '', freeKeyId: '', revokedKeyId: '', licenceId: '', licenceLabel: 'Gate 1 <north>', sessionCookie: '' };

  await t.test('first operator: register, keys, licence, grants, copy, usage, sign out', async (t) => {
    const context = await newContext();
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    const page = await context.newPage();

    await page.goto('/back-office/');
    t.match(page.url(), /\/back-office\/sign-in$/, 'not signed in: the sign-in page');
    await inspect(t, page, 'sign-in');
    await page.getByRole('link', { name: 'Register' }).click();
    await inspect(t, page, 'register');
    await page.getByLabel('E-mail address').fill(FIRST);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Register' }).click();
    t.match(page.url(), /\/back-office\/keys\/new\?done=registered$/);
    first.freeKey = (await page.locator('#new-api-key').textContent()) ?? '';
    t.match(first.freeKey, /^fc_[A-Za-z0-9_-]{32}$/, 'the free plan key is shown');
    first.freeKeyId = app.store.apiKeys.lookup(first.freeKey)!.keyId;
    await inspect(t, page, 'registered-key');
    await page.reload();
    t.notOk((await page.content()).includes(first.freeKey), 'a reload does not show the key again');
    t.match(await page.textContent('main'), /No new key to show/);

    // A few person-API requests with the free key, for the usage page; one enrolment for the person count.
    for (let i = 0; i < 3; i++) t.equal((await apiGet(first.freeKey, '/person/face/x')).status, 404);
    const enrolled = await fetch(`${base}/person/face/alice`, {
      method: 'POST', headers: { 'api-key': first.freeKey, 'content-type': 'application/json' }, body: JSON.stringify({ faceImage: photo }),
    });
    t.equal(enrolled.status, 200, 'a person enrolled with the free key');

    // Create a key, then revoke it after the confirmation.
    await nav(page, 'API keys').click();
    await page.getByLabel('Label').fill('ci client');
    await page.getByLabel('Role').selectOption('match');
    await page.getByRole('button', { name: 'Create the key' }).click();
    const made = (await page.locator('#new-api-key').textContent()) ?? '';
    t.match(made, /^fc_/);
    first.revokedKeyId = app.store.apiKeys.lookup(made)!.keyId;
    t.equal((await apiGet(made, '/person/face/x')).status, 404, 'the new key works');
    await page.getByRole('link', { name: 'Back to the API keys' }).click();
    await inspect(t, page, 'keys');
    await page.getByRole('link', { name: `Revoke key ${first.revokedKeyId}` }).click();
    t.match(await page.textContent('main'), /This cannot be undone/, 'a confirmation first');
    await inspect(t, page, 'revoke-key');
    t.equal(app.store.apiKeys.lookup(made)!.revoked, null, 'not revoked before the confirmation');
    await page.getByRole('button', { name: 'Revoke the key' }).click();
    t.match(await page.textContent('.notice'), /revoked/);
    t.match(await page.locator('tr', { hasText: first.revokedKeyId }).textContent(), /revoked/);
    t.equal((await apiGet(made, '/person/face/x')).status, 403, 'the revoked key is refused');

    // A signing key pair: the private key downloads once.
    await page.getByLabel('Make a signing key pair').check();
    await page.getByRole('button', { name: 'Create the key' }).click();
    t.notMatch(await page.content(), /PRIVATE KEY/, 'the private key is not in the page');
    await inspect(t, page, 'signing-key');
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'Download the private signing key (PEM)' }).click(),
    ]);
    const pem = fs.readFileSync((await download.path())!, 'utf8');
    t.match(pem, /^-----BEGIN PRIVATE KEY-----\n[\s\S]+-----END PRIVATE KEY-----\n?$/, 'the private key downloaded');
    t.match(download.suggestedFilename(), /^face-check-signing-key-[0-9a-f]{12}\.pem$/);
    t.equal((await context.request.get('/back-office/keys/new/signing-key.pem')).status(), 404, 'never twice');
    await page.reload();
    t.equal(await page.getByRole('link', { name: 'Download the private signing key (PEM)' }).count(), 0, 'the link is gone');

    // A licence with an activation code, then its grants by checkbox.
    const { code } = await new ActivationCodes(app.store.activationCodes).issue('free', 30, new Date());
    await nav(page, 'Licences').click();
    await inspect(t, page, 'licences-empty');
    await page.getByLabel('Label').fill(first.licenceLabel);
    await page.getByLabel('Activation code').fill(code);
    await page.getByRole('button', { name: 'Add the licence' }).click();
    t.match(page.url(), /\/back-office\/licences\/lic_[0-9a-f]{16}\?done=licence-added$/);
    first.licenceId = /lic_[0-9a-f]{16}/.exec(page.url())![0];
    await page.getByLabel(/^identify:/).check();
    await page.getByLabel(/^verify:/).check();
    await page.getByRole('button', { name: 'Save grants and settings' }).click();
    t.match(await page.textContent('.notice'), /saved/);
    const stored = await app.app.licences.get({ accountId: app.store.apiKeys.lookup(first.freeKey)!.accountId }, first.licenceId);
    t.same(stored.grants, ['identify', 'verify'], 'the grants are the boxes checked');
    t.ok(await page.getByLabel(/^identify:/).isChecked());
    t.notOk(await page.getByLabel(/^create:/).isChecked());
    await inspect(t, page, 'licence');

    // The copy button copies exactly the command shown, which is the licence's.
    const shown = (await page.locator(`#install-${first.licenceId}`).textContent()) ?? '';
    t.equal(shown, stored.installCommand, 'the command on the page is the licence\'s');
    await page.getByRole('button', { name: /^Copy/ }).click();
    await page.locator('.copied', { hasText: 'Copied' }).waitFor();
    t.equal(await page.evaluate(() => navigator.clipboard.readText()), stored.installCommand, 'the clipboard holds the command');

    // A device API key on the licence line: shown once on its own page, then listed by its id, revoked after a confirmation.
    await page.getByLabel('Role').selectOption('match');
    await page.getByRole('button', { name: 'Create the device key' }).click();
    t.match(page.url(), new RegExp(`/back-office/licences/${first.licenceId}/keys/new$`));
    const deviceKey = (await page.locator('#new-device-key').textContent()) ?? '';
    t.match(deviceKey, /^fcd_[A-Za-z0-9_-]{32}$/, 'the device key is shown');
    await inspect(t, page, 'device-key-new');
    const deviceKeyId = crypto.createHash('sha256').update(deviceKey).digest('hex').slice(0, 12);
    await page.getByRole('link', { name: 'Back to the licence' }).click();
    const deviceKeys = page.locator('table:has(#device-keys-caption)');
    t.match(await deviceKeys.textContent(), new RegExp(`${deviceKeyId}[\\s\\S]*match[\\s\\S]*active`), 'listed by its id');
    t.notOk((await page.content()).includes(deviceKey), 'never the key again');
    await page.getByRole('link', { name: `Revoke device key ${deviceKeyId}` }).click();
    await inspect(t, page, 'device-key-revoke');
    await page.getByRole('button', { name: 'Revoke the device key' }).click();
    t.match(await page.textContent('.notice'), /device key is revoked/);
    t.match(await deviceKeys.textContent(), /revoked /);

    await page.getByRole('link', { name: 'All licences' }).click();
    const line = page.locator('article.licence-line');
    t.match(await line.textContent(), /active[\s\S]*identify, verify[\s\S]*not bound yet[\s\S]*never/, 'status, grants, device, last check');
    t.match(await line.textContent(), /Gate 1 <north>/, 'the label, as typed');
    t.equal(await line.locator('button.copy').isVisible(), true, 'the copy button is on the line');
    await inspect(t, page, 'licences');

    // Usage: the three metered requests and the one person; the plan's quota.
    await nav(page, 'Usage').click();
    const today = new Date().toISOString().slice(0, 10);
    t.equal(await page.locator(`#key-${first.freeKeyId}-caption`).count(), 1, 'a chart for the free key');
    t.equal(await page.locator(`figure:has(#key-${first.freeKeyId}-caption) rect.bar[data-day="${today}"]`).getAttribute('data-requests'), '4',
      'today: the three lookups and the enrolment');
    const quota = await app.app.accounts.quotaOf(app.store.apiKeys.lookup(first.freeKey)!.accountId);
    t.ok(quota.usedToday >= 3, 'the lookups were metered');
    t.match(await page.textContent('main'), new RegExp(`Requests per day \\(plan quota\\)\\s*100\\s*Metered requests used today \\(UTC\\)\\s*${quota.usedToday}` +
      `\\s*Left today\\s*${100 - quota.usedToday}\\s*Enrolled persons\\s*1\\s`), 'the quota, what is left and the persons, as the service counts them');
    t.equal(await page.locator('svg.bars title').first().count(), 1, 'the SVG has its title');
    await inspect(t, page, 'usage');
    await nav(page, 'Account').click();
    await inspect(t, page, 'account');
    await nav(page, 'Password').click();
    await inspect(t, page, 'password');

    // Keyboard: the first Tab reaches the skip link, drawn with a visible focus outline.
    await page.keyboard.press('Tab');
    const focus = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement;
      return { text: el.textContent, outline: getComputedStyle(el).outlineStyle };
    });
    t.same(focus, { text: 'Skip to the content', outline: 'solid' });

    first.sessionCookie = (await context.cookies()).find((c) => c.name === 'fc_session')!.value;
    await page.getByRole('button', { name: 'Sign out' }).click();
    t.match(page.url(), /\/back-office\/sign-in\?done=signed-out$/);
    const replay = await newContext();
    await replay.addCookies([{ name: 'fc_session', value: first.sessionCookie, url: `${base}/back-office/` }]);
    const replayPage = await replay.newPage();
    await replayPage.goto('/back-office/keys');
    t.match(replayPage.url(), /\/back-office\/sign-in$/, 'the old cookie no longer works');
    await replay.close();
    await context.close();
  });

  await t.test('a second operator reaches nothing of the first one\'s', async (t) => {
    const context = await newContext();
    const page = await context.newPage();
    await page.goto('/back-office/register');
    await page.getByLabel('E-mail address').fill(SECOND);
    await page.getByLabel('Password').fill(OTHER_PASSWORD);
    await page.getByRole('button', { name: 'Register' }).click();
    t.match(page.url(), /keys\/new/);
    for (const url of [`/back-office/licences/${first.licenceId}`, `/back-office/licences/${first.licenceId}/revoke`,
      `/back-office/keys/${first.freeKeyId}/revoke`]) {
      const res = await page.goto(url);
      t.equal(res?.status(), 404, `${url}: not found`);
      const text = await page.content();
      for (const secret of [first.licenceId, 'Gate 1', first.freeKeyId, 'fcl_']) t.notOk(text.includes(secret), `${url}: no "${secret}" on the page`);
    }
    // A real form of the second operator, pointed at the first one's key.
    await page.goto('/back-office/keys');
    const csrf = await page.locator('input[name="csrf"]').first().getAttribute('value');
    const refused = await context.request.post(`/back-office/keys/${first.freeKeyId}/revoke`, { form: { csrf: csrf! } });
    t.equal(refused.status(), 404);
    t.equal(app.store.apiKeys.lookup(first.freeKey)!.revoked, null, 'the first operator\'s key is not revoked');
    const keysText = await page.textContent('main');
    t.notOk(keysText!.includes(first.freeKeyId), 'the first one\'s keys are not listed');
    await page.goto('/back-office/licences');
    t.equal(await page.locator('article.licence-line').count(), 0, 'nor the licences');

    // A form sent without its CSRF token: refused, nothing changed.
    await page.goto('/back-office/keys');
    const before = app.store.apiKeys.list().length;
    await page.getByLabel('Label').fill('without token');
    await page.evaluate(() => document.querySelector('form[action="/back-office/keys"] input[name="csrf"]')!.remove());
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/back-office/keys') && r.request().method() === 'POST'),
      page.getByRole('button', { name: 'Create the key' }).click(),
    ]);
    t.equal(response.status(), 403);
    t.match(await page.textContent('main'), /Nothing was changed/);
    t.equal(app.store.apiKeys.list().length, before, 'no key was made');
    await inspect(t, page, 'form-refused');
    await context.close();
  });

  await t.test('with JavaScript disabled: register, sign out, sign in, add a key', async (t) => {
    const context = await newContext(false);
    const page = await context.newPage();
    await page.goto('/back-office/register');
    await page.getByLabel('E-mail address').fill('no-script@example.com');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Register' }).click();
    t.match(await page.locator('#new-api-key').textContent(), /^fc_/);
    t.equal(await page.locator('button.copy').first().isVisible(), false, 'no copy button without script; the text is selectable');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('E-mail address').fill('no-script@example.com');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    t.match(page.url(), /\/back-office\/account$/);
    await nav(page, 'API keys').click();
    await page.getByLabel('Label').fill('made without script');
    await page.getByRole('button', { name: 'Create the key' }).click();
    t.match(await page.locator('#new-api-key').textContent(), /^fc_/);
    t.ok(app.store.apiKeys.list().some((k) => k.label === 'made without script'));
    await context.close();
  });

  // Last: the failures also count against the address every test here signs in from.
  await t.test('sign-in is throttled after five wrong passwords', async (t) => {
    const context = await newContext();
    const page = await context.newPage();
    await page.goto('/back-office/sign-in');
    for (let i = 1; i <= 5; i++) {
      await page.getByLabel('E-mail address').fill(FIRST);
      await page.getByLabel('Password').fill(`wrong password ${i}`);
      await page.getByRole('button', { name: 'Sign in' }).click();
      t.match(await page.textContent('[role="alert"]'), /Wrong e-mail address or password/, `attempt ${i} refused`);
    }
    await page.getByLabel('Password').fill(PASSWORD);
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.getByRole('button', { name: 'Sign in' }).click(),
    ]);
    t.equal(response.status(), 429);
    t.match(await page.textContent('[role="alert"]'), /Too many attempts, try again in 15 minutes/, 'even the right password');
    t.equal((await context.cookies()).some((c) => c.name === 'fc_session'), false, 'no session');
    await inspect(t, page, 'sign-in-throttled');
    await context.close();
  });
}
