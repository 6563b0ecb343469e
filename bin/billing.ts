import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { buildBillingApp, PlaceholderConfigError } from '../lib/billing-app.js';
import { InvalidContextError } from '../lib/config.js';

const app = new App();
try {
  buildBillingApp(app);
} catch (error) {
  // A configuration mistake is one line for the person running cdk, not a stack trace.
  if (error instanceof PlaceholderConfigError || error instanceof InvalidContextError) {
    process.stderr.write(`billing: ${error.message}\n`);
    process.exit(1);
  }
  throw error;
}
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
app.synth();
