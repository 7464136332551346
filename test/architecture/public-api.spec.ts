import { join, relative } from 'node:path';
import ts from 'typescript';

/**
 * Every type a public signature names is itself exported: a user can import each type they meet
 * in the API of `nestjs-durable`, `nestjs-durable/engine`, `/testing` (or, for it, `nestjs-durable`) and `/embedded-postgres`. Walks the written type annotations
 * of every exported declaration (public class members, functions, interfaces, type aliases, the
 * methods of exported objects such as Durable) and reports library types that are not exported.
 * (A class's base class is not checked: DurableModule extends the class Nest's module builder makes.)
 */
const SRC = join(process.cwd(), 'libs', 'durable', 'src');
const ENTRIES = ['index.ts', 'engine.ts', 'testing.ts', 'embedded-postgres.ts'];

const program = ts.createProgram(
  ENTRIES.map((e) => join(SRC, e)),
  {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    experimentalDecorators: true,
    skipLibCheck: true,
    noEmit: true,
  },
);

function violations(entry: string): string[] {
  const checker = program.getTypeChecker();
  const resolve = (s: ts.Symbol) => (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s);
  const exportsOf = (f: string) =>
    checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(join(SRC, f))!)!).map(resolve);
  // nestjs-durable/testing sits next to nestjs-durable: the types it shares with it are imported from there.
  const exported = new Set([...exportsOf(entry), ...(entry === 'testing.ts' ? exportsOf('index.ts') : [])]);
  const found = new Set<string>();
  const inLibrary = (d: ts.Declaration) => d.getSourceFile().fileName.startsWith(SRC);

  const visitType = (node: ts.Node, where: string): void => {
    if (ts.isTypeReferenceNode(node) || ts.isExpressionWithTypeArguments(node)) {
      const name = ts.isTypeReferenceNode(node) ? node.typeName : node.expression;
      const symbol = checker.getSymbolAtLocation(name);
      const target = symbol && resolve(symbol);
      const decl = target?.declarations?.[0];
      if (target && decl && inLibrary(decl) && !exported.has(target) && !(target.flags & ts.SymbolFlags.TypeParameter)) {
        found.add(`${where} names ${target.name} (${relative(SRC, decl.getSourceFile().fileName)})`);
      }
    }
    ts.forEachChild(node, (c) => visitType(c, where));
  };
  const isPrivate = (m: ts.Node) =>
    ts.canHaveModifiers(m) &&
    (ts.getModifiers(m) ?? []).some((x) => x.kind === ts.SyntaxKind.PrivateKeyword || x.kind === ts.SyntaxKind.ProtectedKeyword);
  const visitSignature = (node: ts.SignatureDeclarationBase, where: string) => {
    node.typeParameters?.forEach((p) => p.constraint && visitType(p.constraint, where));
    node.parameters.forEach((p) => p.type && visitType(p.type, where));
    if (node.type) visitType(node.type, where);
  };

  for (const symbol of exported) {
    for (const decl of symbol.declarations ?? []) {
      if (!inLibrary(decl)) continue;
      const where = symbol.name;
      if (ts.isClassDeclaration(decl)) {
        const overloaded = new Set(decl.members.filter((m) => ts.isMethodDeclaration(m) && !m.body).map((m) => m.name!.getText()));
        for (const m of decl.members) {
          if (isPrivate(m) || (m.name && ts.isPrivateIdentifier(m.name))) continue;
          // The implementation signature of an overloaded method is not part of the API.
          if (ts.isMethodDeclaration(m) && m.body && overloaded.has(m.name.getText())) continue;
          if (ts.isConstructorDeclaration(m)) m.parameters.filter((p) => !isPrivate(p) && p.type).forEach((p) => visitType(p.type!, where));
          else if (ts.isMethodDeclaration(m) || ts.isGetAccessorDeclaration(m)) visitSignature(m, `${where}.${m.name.getText()}`);
          else if (ts.isPropertyDeclaration(m) && m.type) visitType(m.type, `${where}.${m.name.getText()}`);
        }
      } else if (ts.isFunctionDeclaration(decl)) visitSignature(decl, where);
      else if (ts.isInterfaceDeclaration(decl) || ts.isTypeAliasDeclaration(decl)) visitType(decl, where);
      else if (ts.isVariableDeclaration(decl)) {
        if (decl.type) visitType(decl.type, where);
        const init = decl.initializer;
        if (init && ts.isObjectLiteralExpression(init)) {
          for (const p of init.properties) if (ts.isMethodDeclaration(p)) visitSignature(p, `${where}.${p.name.getText()}`);
        }
      }
    }
  }
  return [...found].sort();
}

describe('public API', () => {
  it.each(ENTRIES)('%s: every library type in a public signature is exported', (entry) => {
    expect(violations(entry)).toEqual([]);
  });
});
