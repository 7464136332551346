import type { Socket } from 'node:net';
import type { PGlite } from '@electric-sql/pglite';
import type { PGLiteSocketServer } from '@electric-sql/pglite-socket';

const NOTIFICATION_RESPONSE = 0x41; // 'A'

/**
 * PGlite is one backend for every socket, so the NotificationResponse of a NOTIFY comes back
 * in the response of the socket that committed it, not on the socket that ran LISTEN. Take
 * those messages out of every response and write them to every connected socket instead:
 * the library's LISTEN connection then gets its wake-ups. (Clients that did not LISTEN ignore them.)
 * Call after server.start().
 */
export function fanOutNotifications(db: PGlite, server: PGLiteSocketServer): void {
  const net = (server as unknown as { server: import('node:net').Server | null }).server;
  if (!net) throw new Error('fanOutNotifications: start the socket server first');
  const sockets = new Set<Socket>();
  net.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  const exec = db.execProtocolRawStream.bind(db);
  db.execProtocolRawStream = (message, options) => {
    let pending = Buffer.alloc(0);
    return exec(message, {
      ...options,
      onRawData: (chunk: Uint8Array) => {
        pending = pending.length ? Buffer.concat([pending, chunk]) : Buffer.from(chunk);
        const kept: Buffer[] = [];
        // Backend messages: 1 type byte, then an int32 length that counts itself.
        while (pending.length >= 5 && pending.length >= 1 + pending.readInt32BE(1)) {
          const msg = pending.subarray(0, 1 + pending.readInt32BE(1));
          pending = pending.subarray(msg.length);
          if (msg[0] === NOTIFICATION_RESPONSE) {
            for (const s of sockets) if (s.writable) s.write(Buffer.from(msg));
          } else kept.push(msg);
        }
        if (kept.length) options.onRawData(Buffer.concat(kept));
      },
    });
  };
}
