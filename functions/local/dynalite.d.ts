// dynalite ships no type declarations; this covers the part stepthread uses.
declare module 'dynalite' {
  interface DynaliteOptions {
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
