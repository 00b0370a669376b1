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
