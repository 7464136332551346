import 'reflect-metadata';
import { Body, Controller, Headers, HttpCode, Inject, Param, Post, UseGuards, ValidationPipe, type Type } from '@nestjs/common';
import { isPayloadClass, type SignalDefinition } from '../definitions/signals.js';
import { DurableRuntime } from './durable-runtime.js';
import { httpErrorOf } from './http-errors.js';
import { ApiBody, ApiOperation, ApiParam, ApiTags, loadSwagger } from './admin/swagger.js';

/** A class payload checked by Nest's ValidationPipe (class-validator): unknown properties refused; the body itself is kept. */
export function checkPayloadClass(signal: SignalDefinition, body: unknown): Promise<unknown> {
  if (!isPayloadClass(signal.payload)) return Promise.resolve(body);
  const pipe = new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true, transform: false });
  return pipe.transform(body, { type: 'body', metatype: signal.payload as Type }) as Promise<unknown>;
}

/**
 * The controller of the app's signals: `POST <path>/<signal>/:runId` per signal, behind that
 * signal's own guards (the app's), the body checked against its payload, then delivered to the
 * run (WorkflowClient.sendSignal); an Idempotency-Key header delivers a retried POST once.
 * 200 { runId, signal, delivered: true }; 400 bad payload, 404 unknown run, 409 run ended or not
 * one that takes the signal; the guards' own 401/403. Described in the app's OpenAPI document.
 */
export function createSignalsController(path: string, signals: readonly SignalDefinition[]): Type {
  void loadSwagger();
  @Controller(path)
  class DurableSignalsController {
    constructor(@Inject(DurableRuntime) readonly runtime: DurableRuntime) {}
  }
  ApiTags('durable signals')(DurableSignalsController);
  const proto = DurableSignalsController.prototype as unknown as Record<string, unknown>;
  signals.forEach((signal, i) => {
    const key = `send${i}`;
    proto[key] = async function (this: DurableSignalsController, runId: string, body: unknown, idempotencyKey?: string) {
      try {
        // An Idempotency-Key header makes a retried POST (or a double click) deliver once.
        const opts = idempotencyKey ? { idempotencyKey } : {};
        await this.runtime.engine.sendSignal(runId, signal, await checkPayloadClass(signal, body), opts);
        return { runId, signal: signal.name, delivered: true };
      } catch (err) {
        throw httpErrorOf(err);
      }
    };
    Reflect.defineMetadata('design:paramtypes', [String, Object, String], proto, key);
    Param('runId')(proto, key, 0);
    Body()(proto, key, 1);
    Headers('idempotency-key')(proto, key, 2);
    const descriptor = Object.getOwnPropertyDescriptor(proto, key)!;
    for (const decorate of [
      Post(`${signal.name}/:runId`),
      HttpCode(200),
      ...(signal.guards.length ? [UseGuards(...(signal.guards as Type[]))] : []),
      ApiOperation({ summary: `Send signal ${signal.name} to a run waiting for it`, description: signal.description }),
      ApiParam({ name: 'runId', description: 'The run that waits (Durable.waitForSignal)' }),
      ...(isPayloadClass(signal.payload) ? [ApiBody({ type: signal.payload })] : []),
      ...signal.decorators,
    ])
      decorate(proto, key, descriptor);
    Object.defineProperty(proto, key, descriptor);
  });
  return DurableSignalsController;
}

/**
 * The controller callback URLs point to: `POST <path>/:token` delivers the body to the run that
 * made the URL (Durable.callback). 200 { ok, duplicate }; 400 bad payload; 404 unknown token
 * (forged or altered); 409 used with another body; 410 expired or run ended. Tokens are never
 * logged: nothing here writes them anywhere.
 */
export function createCallbacksController(path: string): Type {
  @Controller(path)
  class DurableCallbacksController {
    constructor(@Inject(DurableRuntime) readonly runtime: DurableRuntime) {}

    @Post(':token')
    @HttpCode(200)
    async complete(@Param('token') token: string, @Body() body: unknown) {
      try {
        const r = await this.runtime.engine.completeCallback(token, body, checkPayloadClass);
        return { ok: true, duplicate: r.duplicate };
      } catch (err) {
        throw httpErrorOf(err);
      }
    }
  }
  // Not in the app's OpenAPI document: a URL a third party is handed is not an API to discover. Set as
  // @nestjs/swagger's ApiExcludeController() would, without loading it (every app mounts this controller).
  Reflect.defineMetadata('swagger/apiExcludeController', [true], DurableCallbacksController);
  return DurableCallbacksController;
}
