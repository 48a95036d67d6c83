// A text the operator copies (a new key, an installation command): shown in full, selectable without
// JavaScript, with a copy button that copy.js reveals and wires (progressive enhancement).
import { html } from '../html';

export function copyable(id: string, caption: string, text: string) {
  return html`<div class="copyable">
  <p class="caption" id="${id}-caption">${caption}</p>
  <pre id="${id}" aria-labelledby="${id}-caption" tabindex="0"><code>${text}</code></pre>
  <button type="button" class="copy" data-copy="${id}" hidden>Copy<span class="visually-hidden"> ${caption}</span></button>
  <span class="copied" role="status" aria-live="polite"></span>
</div>`;
}

/** A licence line's installation command, or why the cloud offers none (its package would compile on the board). */
export function installation(id: string, caption: string, command: string | null, unavailable: string | undefined) {
  return command !== null ? copyable(id, caption, command) : html`<p class="problem" id="${id}">${unavailable ?? 'No installation command.'}</p>`;
}
