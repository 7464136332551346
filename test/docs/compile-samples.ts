import { join } from 'node:path';
import ts from 'typescript';
import { rel, repoRoot, type CodeBlock } from './markdown.js';

/** Compiles the samples as one program with the repository's compiler options; returns the errors, by sample. */
export function compileSamples(samples: CodeBlock[]): string[] {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(repoRoot, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  );
  if (!config) throw new Error('tsconfig.json could not be read');
  const options: ts.CompilerOptions = { ...config.options, noEmit: true, declaration: false, sourceMap: false, incremental: false };
  // Virtual files beside the example app's sources: src/__doc_sample_<n>.ts.
  const virtual = new Map<string, { source: string; sample: CodeBlock }>();
  samples.forEach((sample, i) => virtual.set(join(repoRoot, 'src', `__doc_sample_${i}.ts`), { source: sample.code, sample }));
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const readFile = host.readFile.bind(host);
  host.fileExists = (f) => virtual.has(f) || fileExists(f);
  host.readFile = (f) => virtual.get(f)?.source ?? readFile(f);
  host.getSourceFile = (f, lang, onError, create) => {
    const v = virtual.get(f);
    return v ? ts.createSourceFile(f, v.source, lang, true, ts.ScriptKind.TS) : getSourceFile(f, lang, onError, create);
  };
  const program = ts.createProgram({ rootNames: [...virtual.keys()], options, host });
  const errors: string[] = [];
  for (const [path, { sample }] of virtual) {
    const file = program.getSourceFile(path)!;
    const diagnostics = [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)];
    for (const d of diagnostics) {
      const at = d.start === undefined ? 0 : file.getLineAndCharacterOfPosition(d.start).line + 1;
      // Line in the markdown file: the fence's line + the line inside the sample.
      errors.push(`${rel(sample.file)}:${sample.line + at}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    }
    if (!/^\s*(import|export)\s/m.test(sample.code))
      errors.push(`${rel(sample.file)}:${sample.line}: a sample is a complete file with its imports (or fence it \`\`\`ts fragment)`);
  }
  return errors;
}
