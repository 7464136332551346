import { Module } from '@nestjs/common';
import { AssistantController } from './assistant.controller.js';
import { AssistantSteps, AssistantWorkflow } from './assistant.workflow.js';

/** The shop assistant: a workflow that streams its answer to the browser (Durable.stream + Server-Sent Events). */
@Module({ controllers: [AssistantController], providers: [AssistantSteps, AssistantWorkflow] })
export class AssistantModule {}
