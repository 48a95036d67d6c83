// The back-office's static files, each with its address: the path carries the first hex digits of the
// content's SHA-256, so a browser's year-long cached copy is never served for a changed file.
import crypto from 'node:crypto';
import { BASE } from '../paths';
import { COPY_JS } from './copy-script';
import { STYLE_CSS } from './style';

export interface StaticAsset {
  /** Relative to the back-office's prefix. */
  path: string;
  /** Absolute, for links in pages. */
  url: string;
  contentType: string;
  body: string;
}

function asset(name: string, extension: string, contentType: string, body: string): StaticAsset {
  const version = crypto.createHash('sha256').update(body).digest('hex').slice(0, 12);
  const path = `/static/${name}.${version}.${extension}`;
  return { path, url: `${BASE}${path}`, contentType, body };
}

export const STYLESHEET = asset('style', 'css', 'text/css; charset=utf-8', STYLE_CSS);
export const COPY_SCRIPT = asset('copy', 'js', 'text/javascript; charset=utf-8', COPY_JS);
