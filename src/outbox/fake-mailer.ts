import { Injectable, Logger } from '@nestjs/common';

/** Stands in for an SMTP/API mailer: writes the email to the log. */
@Injectable()
export class FakeMailer {
  private readonly log = new Logger('Mailer');

  async send(email: { id: string; to: string; subject: string }): Promise<void> {
    // A real mailer would pass email.id as Message-ID, so a resend after a crash is recognisable.
    this.log.log(`📧 to ${email.to}: ${email.subject}`);
  }
}
