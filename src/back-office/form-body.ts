// The back-office's request bodies: HTML forms (application/x-www-form-urlencoded), parsed with
// URLSearchParams inside the back-office's scope only, so the JSON API's body rules stay as they are.
// Bodies over FORM_BODY_LIMIT are refused (413) before they are kept.
import type { FastifyInstance } from 'fastify';

export const FORM_BODY_LIMIT = 64 * 1024;

export type FormBody = Map<string, string[]>;

/** The fields of a urlencoded body; a repeated name (checkboxes) keeps every value in order. */
export function parseForm(text: string): FormBody {
  const form: FormBody = new Map();
  for (const [name, value] of new URLSearchParams(text)) {
    const values = form.get(name);
    if (values) values.push(value);
    else form.set(name, [value]);
  }
  return form;
}

/** The first value of `name`, or '' when absent. */
export function field(form: FormBody | undefined, name: string): string {
  return form?.get(name)?.[0] ?? '';
}

/** Every value of `name` (checkboxes), or []. */
export function fields(form: FormBody | undefined, name: string): string[] {
  return form?.get(name) ?? [];
}

/** Replaces the scope's body parsers with the urlencoded one; any other Content-Type is 415. */
export function acceptFormBodies(scope: FastifyInstance): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT },
    (_request, body, done) => done(null, parseForm(body as string)));
}
