// Conversions between the LMDB records' ISO 8601 strings and PostgreSQL's timestamptz (which pg reads as a
// Date). The records keep milliseconds and Z, as the service writes them (Date.toISOString()).

export function iso(d: Date): string {
  return d.toISOString();
}

export function isoOrNull(d: Date | null): string | null {
  return d === null ? null : d.toISOString();
}
