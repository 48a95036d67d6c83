// An ini written for a folder of its own (the README's cloud ini: no [storage] path, or `path = ./data`) keeps
// its store beside itself; installed as a service, the only folder it may write is the state folder. Such an
// ini is installed with its [storage] path set to that folder, in the text itself, so what is in
// /etc/face-check says where the store is. An absolute path is left as written (and checked by the caller).
import path from 'node:path';
import { parse } from 'ini';

const SECTION = /^\s*\[([^\]]+)\]\s*(?:[;#].*)?$/;
const PATH_KEY = /^\s*path\s*=/;

/** The ini text with [storage] path = `stateDir` when its own is absent or relative; undefined when absolute. */
export function withStoragePathIn(text: string, stateDir: string): string | undefined {
  const written = (parse(text).storage as Record<string, unknown> | undefined)?.path;
  if (typeof written === 'string' && path.isAbsolute(written)) return undefined;
  const line = `path = ${stateDir}`;
  const lines = text.split(/\r?\n/);
  let inStorage = false;
  let header = -1;
  for (let i = 0; i < lines.length; i++) {
    const section = SECTION.exec(lines[i]);
    if (section) {
      inStorage = section[1].trim() === 'storage';
      if (inStorage && header < 0) header = i;
      continue;
    }
    if (inStorage && PATH_KEY.test(lines[i])) {
      lines[i] = line;
      return lines.join('\n');
    }
  }
  if (header >= 0) {
    lines.splice(header + 1, 0, line);
    return lines.join('\n');
  }
  return `${text.replace(/\s*$/, '')}\n[storage]\n${line}\n`;
}
