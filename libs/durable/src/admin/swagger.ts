/**
 * @nestjs/swagger decorators when the app has @nestjs/swagger installed (an optional peer
 * dependency), decorators that do nothing otherwise: the admin API works either way, and an
 * app that uses SwaggerModule gets the admin endpoints described in its OpenAPI document.
 */
type Decorate = (...args: any[]) => any;

let swagger: Record<string, Decorate> | null = null;
try {
  swagger = (await import('@nestjs/swagger')) as unknown as Record<string, Decorate>;
} catch {
  swagger = null;
}

const noop = () => undefined;
const wrap =
  (name: string): Decorate =>
  (...args: unknown[]) =>
    swagger?.[name] ? swagger[name](...args) : noop;

export const swaggerAvailable = () => swagger !== null;
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
