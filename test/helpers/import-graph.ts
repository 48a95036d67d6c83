// The import graph of a TypeScript source folder, read with the TypeScript compiler's pre-processor:
// static imports and re-exports (type-only ones too: a type cycle still ties the files together),
// dynamic import() and require() of relative paths. Packages and node: modules are left out.
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** Each file (path relative to the root, '/'-separated) and the files it imports. */
export type ImportGraph = Map<string, string[]>;

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return /\.ts$/.test(e.name) && !e.name.endsWith('.d.ts') ? [full] : [];
  });
}

/** The file a relative specifier names: x.ts, x/index.ts, or undefined (not a source of the folder). */
function resolve(from: string, specifier: string): string | undefined {
  const base = path.resolve(path.dirname(from), specifier);
  for (const candidate of [base, `${base}.ts`, path.join(base, 'index.ts')]) {
    if (candidate.endsWith('.ts') && fs.existsSync(candidate) && fs.statSync(candidate).isFile()) return candidate;
  }
  return undefined;
}

export function importGraph(root: string): ImportGraph {
  const graph: ImportGraph = new Map();
  const rel = (file: string) => path.relative(root, file).split(path.sep).join('/');
  for (const file of sourceFiles(root)) {
    const info = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
    const targets = info.importedFiles
      .map((f) => f.fileName)
      .filter((s) => s.startsWith('.'))
      .map((s) => resolve(file, s))
      .filter((f): f is string => f !== undefined && f.startsWith(root + path.sep))
      .map(rel);
    graph.set(rel(file), [...new Set(targets)].sort());
  }
  return graph;
}

/** Every strongly connected group of two or more files, or a file importing itself: each is a cycle. */
export function importCycles(graph: ImportGraph): string[][] {
  // Tarjan's algorithm.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1 || graph.get(v)?.includes(v)) cycles.push(group.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return cycles;
}

/** A rule: files under `from` must not import files under any of `notTo` (folder prefixes, '/'-ended). */
export interface LayerRule {
  from: string;
  notTo: string[];
}

/** Imports that break a rule, as "importer -> imported". */
export function layerViolations(graph: ImportGraph, rules: readonly LayerRule[]): string[] {
  const out: string[] = [];
  for (const [file, targets] of graph) {
    for (const rule of rules.filter((r) => file.startsWith(r.from))) {
      for (const target of targets) {
        if (rule.notTo.some((prefix) => target.startsWith(prefix))) out.push(`${file} -> ${target}`);
      }
    }
  }
  return out.sort();
}
