/**
 * How the user ran this CLI, so a command it prints for them to run next (`resume`, `respond`,
 * `inspect`, …) runs where they are: `npm run stepthread -- …` in a checkout, `npx stepthread …`
 * through npx, `stepthread …` from a global or linked bin (or any other way).
 */

/**
 * Read from what npm (and yarn, pnpm) set for the process they start: `npm run stepthread` sets
 * npm_lifecycle_event to the script's name and npm_command to `run` (`run-script` before npm 11);
 * `npx stepthread` (npm exec) sets npm_command `exec` and npm_lifecycle_script to the command it
 * runs. A process started by another one run so (a test runner started with `npx vitest`) sees that
 * one's, so the command's name is checked too, not just that npm started something.
 */
export function cliInvocation(env: Readonly<Record<string, string | undefined>>): string {
  const agent = env.npm_config_user_agent ?? '';
  const runScript = env.npm_command === 'run' || env.npm_command === 'run-script';
  if (env.npm_lifecycle_event === 'stepthread' && (runScript || env.npm_command === undefined)) {
    // yarn and pnpm run a script by its name, and pass what follows it on.
    const manager = /^(yarn|pnpm)\//.exec(agent)?.[1];
    return manager === undefined ? 'npm run stepthread --' : `${manager} stepthread`;
  }
  // `npx stepthread@0.2 …` goes on with the same version.
  const executed = env.npm_command === 'exec' ? firstWord(env.npm_lifecycle_script) : undefined;
  if (executed !== undefined && /^stepthread(@\S+)?$/.test(executed)) return `npx ${executed}`;
  return 'stepthread';
}

/** The command's first word, unquoted (npm exec quotes it: `'stepthread'`). */
function firstWord(script: string | undefined): string | undefined {
  const word = script?.trim().split(/\s+/)[0];
  return word?.replace(/^'(.*)'$/, '$1').replace(/^"(.*)"$/, '$1');
}

/** The commands a message may tell the user to run. */
const COMMAND_NAMES = 'copy|resume|respond|pending|run|runs|inspect|dev|validate|start|compile';

/**
 * `text` with each `stepthread <command>` it names written in the form the user ran (`cli`): messages
 * made below the CLI (the local runtime's "copy it (stepthread copy …)", a stored error) cannot know
 * it. A form already written out (`npx stepthread resume`, `npm run stepthread -- …`) is left as it is.
 */
export function inUserForm(text: string, cli: string): string {
  if (cli === 'stepthread') return text;
  const named = new RegExp(
    `(?<=^|[\\s(\`'"])(?<!(?:npx|pnpm|yarn) )stepthread (?=(?:${COMMAND_NAMES})\\b)`,
    'g',
  );
  return text.replace(named, `${cli} `);
}
