import { Module } from '@nestjs/common';
import { PaymentGateway } from './payment-gateway.js';
import { PaymentsService } from './payments.service.js';

@Module({ providers: [PaymentGateway, PaymentsService], exports: [PaymentsService] })
export class PaymentsModule {}
