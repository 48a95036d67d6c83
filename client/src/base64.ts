// Standard padded base64 (what the API takes) of bytes, in Node and in a browser alike.

const CHUNK = 0x8000;

export function toBase64(bytes: Uint8Array): string {
  // Node's Buffer when present (fast, no intermediate string); else btoa over binary-string chunks.
  const B = (globalThis as { Buffer?: { from(b: ArrayBufferLike, o: number, l: number): { toString(e: string): string } } }).Buffer;
  if (B) return B.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
  let binary = '';
  for (let i = 0; i < bytes.length; i += CHUNK) {
    binary += String.fromCharCode.apply(null, Array.from(bytes.subarray(i, i + CHUNK)));
  }
  return btoa(binary);
}
