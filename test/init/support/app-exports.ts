// The example's root module exported the ways apps export theirs, for `nestjs-durable verify --export`.
import { AppModule } from '../../../src/app.module.js';

export { AppModule };
/** A dynamic module, built when the file is loaded (reads DATABASE_URL). */
export const AppDynamic = AppModule.forRoot();
/** A factory: verify calls it with no arguments. */
export const makeAppModule = async () => AppModule.forRoot();
