/**
 * ajv, as arguments.ts loads it lazily. An ES module of ours between the two, because the CLI bundle
 * (scripts/build.ts) splits every `import()` into a chunk of its own, and esbuild gives the chunk of
 * a CommonJS package only a `default` export (evanw/esbuild#3245): `import('ajv')` there had no
 * `Ajv`. A static import of it, as here, is converted with its named exports.
 */
export { Ajv } from 'ajv';
