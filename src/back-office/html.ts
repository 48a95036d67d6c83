// HTML built by a tagged template that escapes every interpolated value unless it is already HTML made here
// (an Html) or explicitly marked safe with trusted(). Pages never concatenate strings into markup, so a
// label, an e-mail address or a licence name cannot inject markup or script.

/** Markup known to be safe: produced by `html` or marked with trusted(). */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

/** The text with every character that is special in HTML content or attribute values escaped. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (c) => ESCAPES[c]);
}

type Value = Html | string | number | boolean | null | undefined | readonly Value[];

function render(value: Value): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

/** Markup with `values` escaped; arrays are joined, null/undefined/false render as nothing. */
export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new Html(out);
}

/** Marks markup as safe. Only for constants written in this program, never for anything that came from a
 *  request or the store. */
export function trusted(markup: string): Html {
  return new Html(markup);
}
