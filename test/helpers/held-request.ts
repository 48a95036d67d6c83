// Raw-socket requests for drain tests: a recognition whose body is held back (headers and 5 bytes now, the
// rest when asked), so the request is in flight when a signal arrives; and a probe of whether the port still
// accepts connections.
import net from 'node:net';
import { BOOTSTRAP_KEY } from './app';

export function heldRecognition(port: number, body: string) {
  const head = `POST /person/recognize-face HTTP/1.1\r\nHost: 127.0.0.1\r\nApi-Key: ${BOOTSTRAP_KEY}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
  const socket = net.connect(port, '127.0.0.1');
  let text = '';
  socket.on('data', (c) => { text += c.toString('latin1'); });
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const connected = new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return {
    start: async () => {
      await connected;
      socket.write(head + body.slice(0, 5));
      await new Promise((r) => setTimeout(r, 200)); // the server has the headers: the request is in flight
    },
    finish: () => socket.write(body.slice(5)),
    closed,
    answer: () => text,
  };
}

/** True when a connection to the port is refused (the listener is closed). */
export function connectRefused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => { s.destroy(); resolve(false); });
    s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}
