import { Module } from '@nestjs/common';
import { FakeMailer } from './fake-mailer.js';
import { OutboxRelay } from './outbox-relay.js';
import { OutboxService } from './outbox.service.js';

@Module({ providers: [OutboxService, OutboxRelay, FakeMailer], exports: [OutboxService] })
export class OutboxModule {}
