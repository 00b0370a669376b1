/**
 * The web console of `stepthread dev`: built into console/dist, which the dev server serves. Nothing
 * is loaded from a CDN at run time.
 */
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

export default defineConfig({
  root: import.meta.dirname,
  base: './',
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, chunkSizeWarningLimit: 1000 },
  // `npm run dev:console` proxies the API to a running `stepthread dev`.
  server: { proxy: { '/api': 'http://127.0.0.1:4317' } },
});
