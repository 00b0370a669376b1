/** `stepthread version`: the package's version, as `stepthread --version` prints it. */
import type { Command } from 'commander';
import type { CliIo } from '../io.ts';
import { packageVersion } from '../package-info.ts';

export function registerVersion(program: Command, io: CliIo): void {
  program
    .command('version')
    .description('print the stepthread version')
    .action(() => io.stdout(`${packageVersion()}\n`));
}
