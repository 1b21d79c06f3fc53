import { defineProject } from 'vitest/config';
import { sbxProject } from '../../vitest.shared.js';

export default defineProject(sbxProject('egress'));
