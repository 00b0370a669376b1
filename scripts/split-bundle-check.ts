/**
 * A check on a split esbuild bundle (the CLI's, scripts/build.ts): no `import()` may reach a CommonJS
 * module. With `splitting`, esbuild makes each `import()` target a chunk of its own and gives a
 * CommonJS one only a `default` export (evanw/esbuild#3245), so `const { Ajv } = await import('ajv')`,
 * which Node answers with ajv's named exports in a checkout, finds no `Ajv` in the bundle. The fix
 * is an ES module of ours that imports the package statically and re-exports what is used
 * (functions/tools/ajv.ts); this check makes the build fail where one is missing.
 */
import type { Metafile } from 'esbuild';

/** Each `import()` in the bundle's inputs whose target esbuild read as CommonJS, described. */
export function commonJsDynamicImports(metafile: Metafile): string[] {
  const found: string[] = [];
  for (const [importer, input] of Object.entries(metafile.inputs)) {
    for (const imported of input.imports) {
      if (imported.kind !== 'dynamic-import' || imported.external) continue;
      if (metafile.inputs[imported.path]?.format !== 'cjs') continue;
      found.push(
        `${importer}: import('${imported.original ?? imported.path}') reaches CommonJS ${imported.path}`,
      );
    }
  }
  return found;
}

/** Throws, listing them, when a split bundle has any `import()` of a CommonJS module. */
export function assertNoCommonJsDynamicImports(metafile: Metafile): void {
  const found = commonJsDynamicImports(metafile);
  if (found.length === 0) return;
  throw new Error(
    'the split bundle would give these import()s only a default export (esbuild splits a CommonJS ' +
      'module into a chunk that exports nothing else); import the package statically from an ES module ' +
      `of ours and import() that instead (as functions/tools/ajv.ts does):\n  ${found.join('\n  ')}`,
  );
}
