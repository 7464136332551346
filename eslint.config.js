import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/**', 'src/generated/**', 'node_modules/**', 'bench/node_modules/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  { files: ['**/*.js', '**/*.mjs'], languageOptions: { globals: { process: 'readonly', console: 'readonly' } } },
  {
    // The dashboard: browser ES modules served to the page as they are (no build step).
    files: ['libs/durable/src/admin/dashboard/**/*.js'],
    languageOptions: {
      globals: Object.fromEntries(
        [
          'document',
          'window',
          'location',
          'history',
          'navigator',
          'sessionStorage',
          'Blob',
          'URL',
          'fetch',
          'setTimeout',
          'clearTimeout',
          'setInterval',
          'clearInterval',
          'EventSource',
          'URLSearchParams',
          'requestAnimationFrame',
          'AbortController',
          'TextDecoder',
        ].map((name) => [name, 'readonly']),
      ),
    },
  },
);
