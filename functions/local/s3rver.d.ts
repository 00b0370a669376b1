// s3rver ships no type declarations; this covers the part stepthread uses.
declare module 's3rver' {
  interface S3rverOptions {
    address?: string;
    port?: number;
    silent?: boolean;
    directory?: string;
    resetOnClose?: boolean;
    allowMismatchedSignatures?: boolean;
    vhostBuckets?: boolean;
    configureBuckets?: { name: string; configs?: (string | Uint8Array)[] }[];
  }
  class S3rver {
    constructor(options?: S3rverOptions);
    run(): Promise<import('node:net').AddressInfo>;
    close(): Promise<void>;
    reset(): void;
    httpServer?: import('node:http').Server;
  }
  export default S3rver;
}
