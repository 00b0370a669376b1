/** A Step Functions client stand-in for the commands that talk to a deployed stack. */
import type { SfnLike } from '../../cli/commands/start.ts';

/** A command as sent: its class name (`StartExecutionCommand`, ...) and its input. */
export interface SentCommand {
  name: string;
  input: Record<string, unknown>;
}

/** Records every command in `sent` and answers it with `reply` (which may throw, as the service would). */
export function recordingSfn(
  reply: (name: string, input: Record<string, unknown>) => unknown,
): SfnLike & { sent: SentCommand[] } {
  const sent: SentCommand[] = [];
  return {
    sent,
    async send(command: object) {
      const name = command.constructor.name;
      const input = (command as { input: Record<string, unknown> }).input;
      sent.push({ name, input });
      return reply(name, input);
    },
  };
}
