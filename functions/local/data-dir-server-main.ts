/** The background store server of one data directory (data-dir-server.ts): `node <this> <dataDir> [--standby]`. */
import { serveDataDir } from './data-dir-daemon.ts';
import { serveArguments } from './data-dir-info.ts';

const { dataDir, standby } = serveArguments(process.argv.slice(2));
if (dataDir === undefined) {
  process.stderr.write('usage: data-dir-server-main <dataDir> [--standby]\n');
  process.exit(2);
}
await serveDataDir(dataDir, { standby });
