import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { buildBillingApp } from '../lib/billing-app.js';

const app = new App();
buildBillingApp(app);
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
app.synth();
