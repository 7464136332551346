import { createServer } from 'node:net';
import { freePort, isPortFree } from './ports.js';

describe('freePort', () => {
  it("gives a free port below the operating systems' ranges for outgoing connections", async () => {
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(15_000);
      expect(port).toBeLessThan(32_768);
    }
    expect(await isPortFree(ports[0])).toBe(true);
  });

  it('says a port a server listens on is not free', async () => {
    const server = createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    try {
      expect(await isPortFree(port)).toBe(false);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
