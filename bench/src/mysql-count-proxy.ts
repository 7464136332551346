/**
 * A TCP relay in front of a MySQL-family server that counts the commands its clients send, for one
 * engine alone: the server's own counter (SHOW GLOBAL STATUS 'Questions') is server-wide and counts
 * every other client too. The client → server stream is read as MySQL packets (3-byte length, 1-byte
 * sequence number, payload): a packet with sequence number 0 starts a command, and its first payload
 * byte says which (COM_QUERY 0x03 with the SQL text after it, COM_STMT_PREPARE 0x16, COM_STMT_EXECUTE
 * 0x17, …). The handshake response (sequence 1) and the later packets of a command are not commands.
 * No TLS and no protocol compression (the `mariadb` driver's defaults, which the engine keeps).
 */
import net from 'node:net';

const COMMANDS: Record<number, string> = {
  0x01: 'COM_QUIT',
  0x02: 'COM_INIT_DB',
  0x03: 'COM_QUERY',
  0x0e: 'COM_PING',
  0x11: 'COM_CHANGE_USER',
  0x16: 'COM_STMT_PREPARE',
  0x17: 'COM_STMT_EXECUTE',
  0x19: 'COM_STMT_CLOSE',
  0x1a: 'COM_STMT_RESET',
  0x1f: 'COM_RESET_CONNECTION',
  0xfa: 'COM_STMT_BULK_EXECUTE',
};
/** The commands that are statements (what the server's Questions counts). */
const STATEMENTS = new Set(['COM_QUERY', 'COM_STMT_EXECUTE', 'COM_STMT_BULK_EXECUTE']);

export interface CommandCounts {
  /** By command; COM_QUERY and COM_STMT_PREPARE also by their SQL (first 70 characters). */
  byCommand: Record<string, number>;
  bySql: Record<string, number>;
  /** COM_QUERY + COM_STMT_EXECUTE + COM_STMT_BULK_EXECUTE. */
  statements: number;
  connections: number;
}

export interface CountingProxy {
  /** `target` with the relay's host and port. */
  url: string;
  snapshot(): CommandCounts;
  close(): Promise<void>;
}

const sqlKey = (payload: Buffer) => payload.subarray(1, 400).toString('utf8').replace(/\s+/g, ' ').trim().slice(0, 70);

export async function countingProxy(target: string): Promise<CountingProxy> {
  const t = new URL(target);
  const counts: CommandCounts = { byCommand: {}, bySql: {}, statements: 0, connections: 0 };
  const sockets = new Set<net.Socket>();
  const count = (payload: Buffer) => {
    const name = COMMANDS[payload[0]] ?? `0x${payload[0]?.toString(16)}`;
    counts.byCommand[name] = (counts.byCommand[name] ?? 0) + 1;
    if (STATEMENTS.has(name)) counts.statements++;
    if (name === 'COM_QUERY' || name === 'COM_STMT_PREPARE') {
      const k = `${name === 'COM_QUERY' ? '' : 'PREPARE '}${sqlKey(payload)}`;
      counts.bySql[k] = (counts.bySql[k] ?? 0) + 1;
    }
  };
  const server = net.createServer((client) => {
    counts.connections++;
    const upstream = net.connect(Number(t.port || 3306), t.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    upstream.pipe(client);
    let pending: Buffer = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      while (pending.length >= 4) {
        const len = pending.readUIntLE(0, 3);
        if (pending.length < 4 + len) break;
        if (pending[3] === 0 && len > 0) count(pending.subarray(4, 4 + len));
        pending = pending.subarray(4 + len);
      }
    });
    client.on('end', () => upstream.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const u = new URL(target);
  u.hostname = '127.0.0.1';
  u.port = String((server.address() as net.AddressInfo).port);
  return {
    url: u.toString(),
    snapshot: () => structuredClone(counts),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** after − before, by command and by SQL (zero entries left out). */
export function diffCommands(after: CommandCounts, before: CommandCounts): CommandCounts {
  const diff = (a: Record<string, number>, b: Record<string, number>) =>
    Object.fromEntries(
      Object.entries(a)
        .map(([k, v]) => [k, v - (b[k] ?? 0)] as const)
        .filter(([, v]) => v)
        .sort((x, y) => y[1] - x[1]),
    );
  return {
    byCommand: diff(after.byCommand, before.byCommand),
    bySql: diff(after.bySql, before.bySql),
    statements: after.statements - before.statements,
    connections: after.connections - before.connections,
  };
}
