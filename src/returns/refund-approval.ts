import { timingSafeEqual } from 'node:crypto';
import { ForbiddenException, Inject, Injectable, UnauthorizedException, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { IsBoolean, IsOptional, IsString, MaxLength } from 'class-validator';
import { defineSignal } from 'nestjs-durable';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';

/** An approver's decision on a refund (checked by Nest's ValidationPipe: unknown fields are refused). */
export class RefundDecisionDto {
  @IsBoolean()
  approved!: boolean;

  @IsOptional()
  @IsString()
  @MaxLength(500)
  note?: string;
}

/**
 * Who may approve a refund: a bearer of the approvers' token (APPROVER_TOKEN) or of the admin token
 * (operators answer from the dashboard). Another token: 403; none: 401. A stand-in for the app's
 * real roles (a JWT's claims, a session's user).
 */
@Injectable()
export class RefundApproverGuard implements CanActivate {
  private readonly allowed: Buffer[];

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.allowed = [config.returns.approverToken, config.adminToken].map((t) => Buffer.from(t));
  }

  canActivate(context: ExecutionContext): boolean {
    const header = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers.authorization ?? '';
    const m = /^bearer[ \t]+(\S+)\s*$/i.exec(header);
    if (!m) throw new UnauthorizedException('Sign in: send Authorization: Bearer <token>.');
    const given = Buffer.from(m[1]);
    if (this.allowed.some((a) => a.length === given.length && timingSafeEqual(a, given))) return true;
    throw new ForbiddenException('Only refund approvers may decide on a refund.');
  }
}

/**
 * The signal a large refund waits for. Listed in DurableModule's `signals`, it is the endpoint
 * POST /durable/signals/refund.approval/:runId behind RefundApproverGuard, and the dashboard's
 * Signals panel answers it.
 */
export const RefundApproval = defineSignal<RefundDecisionDto>('refund.approval', {
  payload: RefundDecisionDto,
  guards: [RefundApproverGuard],
  description: 'Approve or decline the refund of a returned order above the approval limit',
});

/** What the refund provider POSTs to the refund's callback URL once the money is back with the customer. */
export interface RefundConfirmation {
  refundId: string;
  status: 'refunded' | 'failed';
}

/** The provider's confirmation, checked by a function before the callback is accepted. */
export const RefundConfirmed = defineSignal<RefundConfirmation>('refund.confirmed', {
  payload: (body) => {
    const b = body as Partial<RefundConfirmation> | null;
    if (typeof b?.refundId !== 'string' || (b.status !== 'refunded' && b.status !== 'failed'))
      throw new Error('expected { "refundId": string, "status": "refunded" | "failed" }');
    return { refundId: b.refundId, status: b.status };
  },
  description: "The refund provider's confirmation (the body of a refund's callback URL)",
  endpoint: false, // it arrives through the callback URL only
});
