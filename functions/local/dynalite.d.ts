// dynalite ships no type declarations; this covers the part stepthread uses.
declare module 'dynalite' {
  export interface DynaliteOptions {
    /** LevelDB directory; in-memory when omitted. One process at a time may open it. */
    path?: string;
    createTableMs?: number;
    deleteTableMs?: number;
    updateTableMs?: number;
    maxItemSizeKb?: number;
    verbose?: boolean;
    debug?: boolean;
    ssl?: boolean;
  }
  function dynalite(options?: DynaliteOptions): import('node:http').Server;
  export default dynalite;
}

// Its expression parsers (PEG), which its request validations call `parse` on; the embedded runtime
// keeps their parses (dynalite-parse-cache.ts).
declare module 'dynalite/db/updateParser.js' {
  export interface Parser<Context = Record<string, unknown>> {
    parse(input: string, options: { context: Context }): unknown;
  }
  const parser: Parser;
  export default parser;
}
declare module 'dynalite/db/conditionParser.js' {
  const parser: import('dynalite/db/updateParser.js').Parser;
  export default parser;
}
declare module 'dynalite/db/projectionParser.js' {
  const parser: import('dynalite/db/updateParser.js').Parser;
  export default parser;
}

// Its store, validations and actions, which functions/local/dynalite-direct.ts calls in process.
declare module 'dynalite/db/index.js' {
  /** What `create` makes: the store dynalite's validations and actions are given. */
  export type DynaliteStore = object & { readonly __dynaliteStore?: never };
  const db: { create(options: unknown): DynaliteStore };
  export default db;
}
declare module 'dynalite/validations/index.js' {
  const validations: {
    checkTypes(data: Record<string, unknown>, types: object): Record<string, unknown>;
    checkValidations(
      data: Record<string, unknown>,
      types: object,
      custom: unknown,
      store: import('dynalite/db/index.js').DynaliteStore,
    ): void;
  };
  export default validations;
}
declare module 'dynalite/validations/*' {
  const validation: { readonly types: object; readonly custom?: unknown };
  export default validation;
}
declare module 'dynalite/actions/*' {
  const action: (
    store: import('dynalite/db/index.js').DynaliteStore,
    data: Record<string, unknown>,
    cb: (error: unknown, output?: Record<string, unknown>) => void,
  ) => void;
  export default action;
}
