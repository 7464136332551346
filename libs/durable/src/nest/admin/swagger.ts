/**
 * @nestjs/swagger decorators when the app has @nestjs/swagger installed (an optional peer
 * dependency), nothing otherwise: the admin API works either way, and an app that uses
 * SwaggerModule gets the admin endpoints described in its OpenAPI document.
 *
 * The package is loaded with a dynamic import() (no top-level await, so this library stays
 * loadable through require(esm)), started when the admin API is enabled. Decorators applied
 * before it has loaded are queued with their targets and applied, in order, once it has: the
 * metadata is in place long before an app can call SwaggerModule.createDocument(), which
 * needs the app (and therefore @nestjs/swagger itself) to be created first.
 */
type Decorate = (...args: any[]) => any;
type Swagger = Record<string, Decorate>;

let swagger: Swagger | null | undefined;
let loading: Promise<void> | null = null;
const queued: Array<(s: Swagger) => void> = [];

/** Starts loading @nestjs/swagger (idempotent); resolves when decorators are applied or dropped. */
export function loadSwagger(): Promise<void> {
  loading ??= import('@nestjs/swagger').then(
    (m) => {
      swagger = m as unknown as Swagger;
      for (const apply of queued.splice(0)) apply(swagger);
    },
    () => {
      swagger = null;
      queued.length = 0;
    },
  );
  return loading;
}

const wrap =
  (name: string): Decorate =>
  (...args: unknown[]) =>
  (...target: unknown[]) => {
    const apply = (s: Swagger) => s[name]?.(...args)(...target);
    if (swagger) apply(swagger);
    else if (swagger === undefined) queued.push(apply);
    return undefined;
  };

export const ApiTags = wrap('ApiTags');
export const ApiOperation = wrap('ApiOperation');
export const ApiQuery = wrap('ApiQuery');
export const ApiParam = wrap('ApiParam');
export const ApiBody = wrap('ApiBody');
export const ApiOkResponse = wrap('ApiOkResponse');
export const ApiCreatedResponse = wrap('ApiCreatedResponse');
export const ApiResponse = wrap('ApiResponse');
export const ApiProperty = wrap('ApiProperty');
export const ApiPropertyOptional = wrap('ApiPropertyOptional');
export const ApiExcludeController = wrap('ApiExcludeController');
export const ApiExtraModels = wrap('ApiExtraModels');
