import type { DynamicModule, ForwardReference, Type } from '@nestjs/common';
import { DurableModule } from './durable.module.js';

/** Nest's metadata key for a module's imports (@Module({ imports })). */
const IMPORTS = 'imports';
export type RootModule = Type<unknown> | DynamicModule;

type Import = Type<unknown> | DynamicModule | Promise<DynamicModule> | ForwardReference | undefined;

/** Whether DurableModule is among a module's imports, statically (classes and dynamic modules, any depth). */
export function importsDurable(root: RootModule): boolean {
  const seen = new Set<unknown>();
  const visit = (m: Import): boolean => {
    if (!m || seen.has(m) || m instanceof Promise) return false;
    seen.add(m);
    if (typeof m === 'object' && 'forwardRef' in m) return visit(m.forwardRef() as Import);
    const cls = typeof m === 'function' ? m : m.module;
    if (cls === DurableModule || cls?.name === 'DurableModule') return true;
    const own: Import[] = (typeof m === 'function' ? undefined : m.imports) ?? [];
    const declared: Import[] = (cls && Reflect.getMetadata(IMPORTS, cls)) ?? [];
    return [...own, ...declared].some(visit);
  };
  return visit(root);
}

/**
 * The module to boot: the one given, or — for a class that does not import DurableModule but has a
 * static `forRoot()` — what `forRoot()` returns (apps that build their root module so).
 */
export async function rootModuleOf(m: RootModule): Promise<RootModule> {
  const forRoot = typeof m === 'function' ? (m as unknown as { forRoot?: unknown }).forRoot : undefined;
  if (typeof forRoot !== 'function' || importsDurable(m)) return m;
  return (await forRoot.call(m)) as DynamicModule;
}
