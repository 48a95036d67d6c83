// ISO/IEC 30107-3 presentation-attack detection metrics from per-session decisions (pure: no camera, no
// files). APCER of an attack kind (a PAI species): its presentations wrongly accepted as live / its
// presentations; the worst case is the highest APCER over the kinds. BPCER: bona fide presentations wrongly
// rejected / bona fide presentations. Each proportion carries the upper bound of its one-sided 95 %
// Clopper-Pearson interval, which is what a count of zero errors out of n actually supports.
import { BONA_FIDE } from './session';

/** What the pipeline decided about one recorded presentation. */
export interface SessionDecision {
  session: string;
  label: string;
  subject: string;
  distanceCm: number | null;
  /** Frames analysed, frames with a face, frames whose decision stored a live capture. */
  frames: number;
  faceFrames: number;
  liveFrames: number;
  /** A live capture was stored: GET /person/face/ would have served this presentation's face. */
  accepted: boolean;
  /** The recording's clock: first frame to the first live capture (null: never accepted). */
  decisionMs: number | null;
  /** The recording's clock: first frame to last frame. */
  durationMs: number;
  /** Refusal reasons over the session's frames (reason -> frames). */
  reasons: Record<string, number>;
}

export interface Rate {
  presentations: number;
  errors: number;
  rate: number | null;
  upper95: number | null;
}

export interface TimeSummary {
  n: number;
  p50: number | null;
  p90: number | null;
  p95: number | null;
  max: number | null;
}

export interface KindSummary {
  label: string;
  bonaFide: boolean;
  presentations: number;
  accepted: number;
  /** Presentations where no frame showed a face (failures to acquire, kept in the rates). */
  noFace: number;
  /** APCER for an attack kind, BPCER for the bona fide label. */
  errorRate: Rate;
  /** Decision times of the accepted presentations. */
  decisionMs: TimeSummary;
}

export interface PadMetrics {
  standard: 'ISO/IEC 30107-3';
  bonaFideLabel: string;
  presentations: number;
  /** Presentations per label. */
  counts: Record<string, number>;
  apcer: Record<string, Rate>;
  /** The highest APCER over the attack kinds (null: no attack presentations). */
  worstCaseApcer: { label: string; rate: number; upper95: number } | null;
  bpcer: Rate;
  kinds: KindSummary[];
  /** Accepted bona fide presentations: first frame to decision. */
  decisionMs: TimeSummary;
  /** Attacks accepted and bona fide presentations rejected. */
  wronglyDecided: { session: string; label: string; subject: string; distanceCm: number | null; error: 'attack accepted' | 'bona fide rejected'; decisionMs: number | null; reasons: Record<string, number> }[];
}

/** Nearest-rank percentile (p in 0..100); null for no values. */
export function percentile(values: number[], p: number): number | null {
  if (!values.length) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Upper bound of a binomial proportion's one-sided 95 % confidence interval (Clopper-Pearson). */
export function upper95(errors: number, n: number): number {
  if (n === 0 || errors >= n) return 1;
  // Bisection on the binomial CDF: P(X <= errors; p) = 0.05.
  const cdf = (p: number) => {
    let sum = 0;
    let term = Math.pow(1 - p, n);
    for (let k = 0; k <= errors; k++) {
      sum += term;
      term *= ((n - k) / (k + 1)) * (p / (1 - p));
    }
    return sum;
  };
  let lo = errors / n;
  let hi = 1;
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (cdf(mid) > 0.05) lo = mid; else hi = mid;
  }
  return hi;
}

function rate(errors: number, presentations: number): Rate {
  return presentations
    ? { presentations, errors, rate: errors / presentations, upper95: upper95(errors, presentations) }
    : { presentations: 0, errors: 0, rate: null, upper95: null };
}

function times(values: number[]): TimeSummary {
  return { n: values.length, p50: percentile(values, 50), p90: percentile(values, 90), p95: percentile(values, 95), max: percentile(values, 100) };
}

/** The metrics of a set of decisions; `bonaFide` names the bona fide label (default `live`). */
export function padMetrics(decisions: SessionDecision[], bonaFide = BONA_FIDE): PadMetrics {
  const labels = [...new Set(decisions.map((d) => d.label))].sort((a, b) => (a === bonaFide ? -1 : b === bonaFide ? 1 : a.localeCompare(b)));
  const counts: Record<string, number> = {};
  const apcer: Record<string, Rate> = {};
  const kinds: KindSummary[] = [];
  for (const label of labels) {
    const of = decisions.filter((d) => d.label === label);
    const accepted = of.filter((d) => d.accepted).length;
    const isBona = label === bonaFide;
    counts[label] = of.length;
    const errorRate = rate(isBona ? of.length - accepted : accepted, of.length);
    if (!isBona) apcer[label] = errorRate;
    kinds.push({
      label, bonaFide: isBona, presentations: of.length, accepted, noFace: of.filter((d) => d.faceFrames === 0).length,
      errorRate, decisionMs: times(of.filter((d) => d.decisionMs !== null).map((d) => d.decisionMs!)),
    });
  }
  let worst: PadMetrics['worstCaseApcer'] = null;
  for (const [label, r] of Object.entries(apcer)) {
    if (r.rate !== null && (!worst || r.rate > worst.rate)) worst = { label, rate: r.rate, upper95: r.upper95! };
  }
  const bona = decisions.filter((d) => d.label === bonaFide);
  const wrong = decisions.filter((d) => (d.label === bonaFide) !== d.accepted);
  return {
    standard: 'ISO/IEC 30107-3',
    bonaFideLabel: bonaFide,
    presentations: decisions.length,
    counts,
    apcer,
    worstCaseApcer: worst,
    bpcer: rate(bona.filter((d) => !d.accepted).length, bona.length),
    kinds,
    decisionMs: times(bona.filter((d) => d.decisionMs !== null).map((d) => d.decisionMs!)),
    wronglyDecided: wrong.map((d) => ({
      session: d.session, label: d.label, subject: d.subject, distanceCm: d.distanceCm,
      error: d.label === bonaFide ? 'bona fide rejected' as const : 'attack accepted' as const,
      decisionMs: d.decisionMs, reasons: d.reasons,
    })),
  };
}
