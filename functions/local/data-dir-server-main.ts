/** The background store server of one data directory (data-dir-server.ts): `node <this> <dataDir>`. */
import { serveDataDir } from './data-dir-daemon.ts';

const dataDir = process.argv[2];
if (dataDir === undefined) {
  process.stderr.write('usage: data-dir-server-main <dataDir>\n');
  process.exit(2);
}
await serveDataDir(dataDir);
